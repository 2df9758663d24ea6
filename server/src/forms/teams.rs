//! The team pages' plain forms (they work without JavaScript): members, invitations, budget,
//! rules, approvals and new teams. Each answers with a redirect back to the page, carrying what was
//! done (`done=`) or the refusal (`error=`). The rules live in `berth_app::backend::teams` and
//! `quotas`.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Redirect;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::state::AppState;
use berth_app::backend::teams;
use berth_app::domain::problem::Problem;
use berth_app::error::AppError;
use serde::Deserialize;

/// The team page's forms, without JavaScript: each posts here and goes back to the page with
/// `done=…` or `error=…` (the error explained in the reader's language).
#[derive(Debug, Deserialize)]
pub struct TeamFormPost {
    /// `invite`, `revoke`, `role` or `remove`.
    action: String,
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    user_id: Option<i64>,
    #[serde(default)]
    invitation_id: Option<i64>,
    /// The budget in the currency as typed (`1500.00`), empty for none.
    #[serde(default)]
    budget: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    warn_percent: Option<String>,
    /// Credits for the team wallet (platform admins), in the currency as typed.
    #[serde(default)]
    amount: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    idempotency_key: Option<String>,
    /// The quota form: a GPU model, GPUs at once (empty: remove the quota), GPU-hours a week.
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    guaranteed_gpus: Option<String>,
    #[serde(default)]
    weekly_gpu_hours: Option<String>,
    /// The rules form (a checkbox: present when ticked).
    #[serde(default)]
    allow_burst: Option<String>,
    #[serde(default)]
    default_priority: Option<String>,
    #[serde(default)]
    approval_over_gpu_hours: Option<String>,
    #[serde(default)]
    approval_expiry_hours: Option<String>,
    /// The booking an approval decides.
    #[serde(default)]
    reservation_id: Option<i64>,
}

/// A whole number typed in field `field` (empty: none).
fn typed_number(field: &str, raw: Option<&str>) -> Result<Option<i64>, AppError> {
    match raw.map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => text.parse::<i64>().map(Some).map_err(|_| {
            AppError::invalid(
                field,
                Problem::Unreadable {
                    detail: format!("`{text}` is not a whole number"),
                },
            )
        }),
    }
}

/// `POST /teams/{id}`: one of the team page's forms.
pub async fn team_form(
    State(state): State<AppState>,
    actor: Actor,
    headers: HeaderMap,
    Path(team_id): Path<i64>,
    axum::Form(form): axum::Form<TeamFormPost>,
) -> Result<Redirect, AppError> {
    // Outsiders learn nothing: the same 404 as the page itself.
    teams::access(&state.db, &actor, team_id).await?;
    let now = state.now();
    let missing = |field: &str| {
        AppError::invalid(
            field,
            Problem::Unreadable {
                detail: format!("{field} is missing"),
            },
        )
    };
    let result = async {
        match form.action.as_str() {
            "invite" => teams::invite(
                &state.db,
                &actor,
                team_id,
                form.email.as_deref().unwrap_or_default(),
                form.role.as_deref().unwrap_or("member"),
                now,
            )
            .await
            .map(|_| "invited"),
            "revoke" => {
                let id = form.invitation_id.ok_or_else(|| missing("invitation_id"))?;
                teams::revoke_invitation(&state.db, &actor, team_id, id, now)
                    .await
                    .map(|()| "revoked")
            }
            "role" => {
                let user_id = form.user_id.ok_or_else(|| missing("user_id"))?;
                let role = teams::parse_role(form.role.as_deref().unwrap_or_default())?;
                teams::change_member(&state.db, &actor, team_id, user_id, Some(role), now)
                    .await
                    .map(|()| "role")
            }
            "remove" => {
                let user_id = form.user_id.ok_or_else(|| missing("user_id"))?;
                teams::change_member(&state.db, &actor, team_id, user_id, None, now)
                    .await
                    .map(|()| "removed")
            }
            "budget" => {
                let currency = &state.portal.currency;
                let limit = match form.budget.as_deref().map(str::trim) {
                    None | Some("") => None,
                    Some(raw) => Some(
                        berth_app::domain::money::Money::parse_decimal(raw, currency)
                            .filter(|amount| amount.minor() >= 0)
                            .ok_or_else(|| {
                                AppError::invalid(
                                    "budget",
                                    Problem::NotAnAmount {
                                        raw: raw.to_owned(),
                                        decimals: currency.exponent(),
                                    },
                                )
                            })?
                            .minor(),
                    ),
                };
                let warn_percent = form
                    .warn_percent
                    .as_deref()
                    .unwrap_or("80")
                    .trim()
                    .parse::<i64>()
                    .unwrap_or(-1);
                teams::set_budget(
                    &state.db,
                    &actor,
                    team_id,
                    limit,
                    form.mode.as_deref().unwrap_or("refuse"),
                    warn_percent,
                    now,
                )
                .await
                .map(|_| "budget")
            }
            "credits" => {
                actor.require_platform_admin()?;
                let currency = &state.portal.currency;
                let raw = form.amount.as_deref().unwrap_or_default();
                let amount = berth_app::domain::money::Money::parse_decimal(raw, currency)
                    .filter(|amount| amount.minor() != 0)
                    .ok_or_else(|| {
                        AppError::invalid(
                            "amount",
                            Problem::NotAnAmount {
                                raw: raw.to_owned(),
                                decimals: currency.exponent(),
                            },
                        )
                    })?;
                berth_app::backend::ledger::change_credits(
                    &state.db,
                    currency,
                    berth_app::backend::ledger::CreditRequest {
                        actor_id: Some(actor.user.id),
                        wallet: berth_app::backend::ledger::CreditWallet::Team(team_id),
                        amount_minor: amount.minor(),
                        reason: form.reason.as_deref().unwrap_or_default(),
                        idempotency_key: form.idempotency_key.as_deref().filter(|k| !k.is_empty()),
                        provider: &berth_app::backend::ledger::ManualProvider,
                    },
                    now,
                )
                .await
                .map(|_| "credits")
            }
            "quota" => {
                let model = form.model.as_deref().unwrap_or_default();
                if model.trim().is_empty() {
                    return Err(missing("model"));
                }
                let guaranteed = typed_number("guaranteed_gpus", form.guaranteed_gpus.as_deref())?;
                let weekly = typed_number("weekly_gpu_hours", form.weekly_gpu_hours.as_deref())?;
                berth_app::backend::quotas::set_quota(
                    &state.db, &actor, team_id, model, guaranteed, weekly, now,
                )
                .await
                .map(|_| "quota")
            }
            "rules" => {
                let policy = berth_app::backend::quotas::PolicyForm {
                    allow_burst: form.allow_burst.is_some(),
                    default_priority: form.default_priority.clone().unwrap_or_default(),
                    approval_over_gpu_hours: typed_number(
                        "approval_over_gpu_hours",
                        form.approval_over_gpu_hours.as_deref(),
                    )?,
                    approval_expiry_hours: typed_number(
                        "approval_expiry_hours",
                        form.approval_expiry_hours.as_deref(),
                    )?,
                };
                berth_app::backend::quotas::set_policy(&state.db, &actor, team_id, &policy, now)
                    .await
                    .map(|_| "rules")
            }
            decision @ ("approve" | "reject") => {
                let id = form
                    .reservation_id
                    .ok_or_else(|| missing("reservation_id"))?;
                let approve = decision == "approve";
                berth_app::backend::quotas::decide(&state, &actor, team_id, id, approve, now)
                    .await
                    .map(|_| if approve { "approved" } else { "rejected" })
            }
            other => Err(AppError::invalid(
                "action",
                Problem::Unreadable {
                    detail: format!("unknown action `{other}`"),
                },
            )),
        }
    }
    .await;
    let page = format!("/teams/{team_id}");
    let left = form.action == "remove" && form.user_id == Some(actor.user.id);
    match result {
        // Who leaves a team can no longer see its page.
        Ok(_) if left => Ok(Redirect::to("/teams")),
        Ok(done) => Ok(Redirect::to(&format!("{page}?done={done}"))),
        // A member who just left their team can no longer see it.
        Err(AppError::NotFound(_)) if left => Ok(Redirect::to("/teams")),
        Err(error @ (AppError::Forbidden | AppError::Unauthorized)) => Err(error),
        Err(error) => Ok(back_with_error(&page, error, &headers, &state)),
    }
}

/// `{"name", "admin_email"}` from the teams page.
#[derive(Debug, Deserialize)]
pub struct CreateFormPost {
    name: String,
    admin_email: String,
}

/// `POST /teams`: a platform admin creates a team from the teams page.
pub async fn create_form(
    State(state): State<AppState>,
    actor: Actor,
    headers: HeaderMap,
    axum::Form(form): axum::Form<CreateFormPost>,
) -> Result<Redirect, AppError> {
    actor.require_platform_admin()?;
    match teams::create(
        &state.db,
        &actor,
        &form.name,
        &form.admin_email,
        state.now(),
    )
    .await
    {
        Ok((id, _)) => Ok(Redirect::to(&format!("/teams/{id}?done=created"))),
        Err(error) => Ok(back_with_error("/teams", error, &headers, &state)),
    }
}

/// Back to `page` with the error, explained in the reader's language, in the query.
pub(crate) fn back_with_error(
    page: &str,
    error: AppError,
    headers: &HeaderMap,
    state: &AppState,
) -> Redirect {
    let error = berth_app::text::language::explained_for(error, headers, state);
    let data = serde_json::to_string(&error).unwrap_or_else(|_| error.to_string());
    let encoded: String = url::form_urlencoded::byte_serialize(data.as_bytes()).collect();
    Redirect::to(&format!("{page}?error={encoded}"))
}
