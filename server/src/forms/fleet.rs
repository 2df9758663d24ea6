//! The fleet page's plain form (platform admins): model prices, a GPU's price and sharing,
//! retiring a GPU. The rules live in `berth_app::backend::fleet`.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Redirect;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::fleet::{self, GpuChange};
use berth_app::backend::state::AppState;
use berth_app::domain::problem::Problem;
use berth_app::error::AppError;
use serde::Deserialize;

/// The fleet page's forms.
#[derive(Debug, Deserialize)]
pub struct FleetFormPost {
    /// `model_price`, `gpu` or `retire`.
    action: String,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    gpu_id: Option<i64>,
    /// A price in the currency as typed (`3.49`).
    #[serde(default)]
    price: Option<String>,
    /// A checkbox: present when ticked.
    #[serde(default)]
    shareable: Option<String>,
}

/// `POST /admin/fleet`: one of the fleet page's forms; back to the page with `done=` or
/// `error=`.
pub async fn fleet_form(
    State(state): State<AppState>,
    actor: Actor,
    headers: HeaderMap,
    axum::Form(form): axum::Form<FleetFormPost>,
) -> Result<Redirect, AppError> {
    actor.require_platform_admin()?;
    let now = state.now();
    let currency = &state.portal.currency;
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
            "model_price" => {
                let model = form.model.as_deref().ok_or_else(|| missing("model"))?;
                let price = fleet::parse_price(
                    "price",
                    form.price.as_deref().unwrap_or_default(),
                    currency,
                )?;
                fleet::set_model_price(&state.db, &actor, model, price, now)
                    .await
                    .map(|_| "price")
            }
            "gpu" => {
                let id = form.gpu_id.ok_or_else(|| missing("gpu_id"))?;
                let price = fleet::parse_price(
                    "price",
                    form.price.as_deref().unwrap_or_default(),
                    currency,
                )?;
                let change = GpuChange {
                    hourly_price_minor: Some(price),
                    shareable: Some(form.shareable.is_some()),
                };
                fleet::update_gpu(&state.db, &actor, id, &change, now)
                    .await
                    .map(|()| "gpu")
            }
            "retire" => {
                let id = form.gpu_id.ok_or_else(|| missing("gpu_id"))?;
                berth_app::backend::reservations::retire_gpu(&state, &actor, id, now)
                    .await
                    .map(|_| "retired")
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
    match result {
        Ok(done) => Ok(Redirect::to(&format!("/admin/fleet?done={done}"))),
        Err(error @ (AppError::Forbidden | AppError::Unauthorized)) => Err(error),
        Err(error) => Ok(crate::forms::teams::back_with_error(
            "/admin/fleet",
            error,
            &headers,
            &state,
        )),
    }
}
