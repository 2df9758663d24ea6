//! The credits page's plain form (platform admins): grant or deduct credits. The rules live in
//! `berth_app::backend::ledger`.

use axum::extract::State;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::ledger;
use berth_app::backend::state::AppState;
use berth_app::domain::problem::Problem;
use berth_app::error::AppError;

/// The credits page's form (`/admin/credits`), without JavaScript.
#[derive(Debug, serde::Deserialize)]
pub struct CreditsFormPost {
    email: String,
    /// `grant` or `deduct`.
    direction: String,
    /// In major units as typed (`100.50` or `100,50`).
    amount: String,
    reason: String,
    #[serde(default)]
    idempotency_key: Option<String>,
}

/// `POST /admin/credits`: records the grant or deduction, then back to the page with `done=ID`
/// or `error=` (the error as JSON, shown in the reader's language).
pub async fn credits_form(
    State(state): State<AppState>,
    actor: Actor,
    axum::Form(form): axum::Form<CreditsFormPost>,
) -> Result<axum::response::Redirect, AppError> {
    actor.require_platform_admin()?;
    let result = async {
        let amount =
            berth_app::domain::money::Money::parse_decimal(&form.amount, &state.portal.currency)
                .filter(|amount| amount.minor() > 0)
                .ok_or_else(|| {
                    AppError::invalid(
                        "amount",
                        Problem::NotAnAmount {
                            raw: form.amount.clone(),
                            decimals: state.portal.currency.exponent(),
                        },
                    )
                })?;
        let amount_minor = match form.direction.as_str() {
            "grant" => amount.minor(),
            "deduct" => -amount.minor(),
            other => {
                return Err(AppError::invalid(
                    "direction",
                    Problem::Unreadable {
                        detail: format!("`{other}`: use grant or deduct"),
                    },
                ));
            }
        };
        ledger::change_credits(
            &state.db,
            &state.portal.currency,
            ledger::CreditRequest {
                actor_id: Some(actor.user.id),
                wallet: berth_app::backend::ledger::CreditWallet::User(&form.email),
                amount_minor,
                reason: &form.reason,
                idempotency_key: form.idempotency_key.as_deref().filter(|k| !k.is_empty()),
                provider: &ledger::ManualProvider,
            },
            state.now(),
        )
        .await
    }
    .await;
    let target = match result {
        Ok(done) => format!("/admin/credits?done={}", done.transaction_id),
        Err(error) => {
            let data = serde_json::to_string(&error).unwrap_or_else(|_| error.to_string());
            let message: String = url::form_urlencoded::byte_serialize(data.as_bytes()).collect();
            format!("/admin/credits?error={message}")
        }
    };
    Ok(axum::response::Redirect::to(&target))
}
