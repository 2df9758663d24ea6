//! Stripe: a small typed client for the few endpoints Berth uses (customers, SetupIntents,
//! PaymentMethods, PaymentIntents, refunds, balance transactions), and the verification of
//! the webhooks Stripe posts (`Stripe-Signature`).
//!
//! Requests are form-encoded, authenticated with the secret key, and each carries an
//! `Idempotency-Key` derived from Berth's own record, so a retry after a timeout never
//! charges twice. `api_base` is `https://api.stripe.com` in production and `localstripe` in
//! the tests.

use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;
use std::collections::BTreeMap;
use std::time::Duration;

/// How far a webhook's signed timestamp may be from the portal's clock.
pub const WEBHOOK_TOLERANCE_SECONDS: i64 = 300;

/// Where Stripe is, and the keys.
#[derive(Clone)]
pub struct StripeSettings {
    /// `https://api.stripe.com`, or a stand-in's address.
    pub api_base: String,
    /// The secret key (`sk_…`).
    pub secret_key: String,
    /// The publishable key (`pk_…`), given to Stripe.js on the page.
    pub publishable_key: String,
    /// The webhook endpoint's signing secret (`whsec_…`).
    pub webhook_secret: String,
    /// Where the page loads Stripe.js from.
    pub js_url: String,
}

impl std::fmt::Debug for StripeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeSettings")
            .field("api_base", &self.api_base)
            .field("publishable_key", &self.publishable_key)
            .field("js_url", &self.js_url)
            .finish_non_exhaustive()
    }
}

/// What went wrong talking to Stripe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StripeError {
    /// Stripe could not be reached, or answered something unreadable.
    Unreachable(String),
    /// Stripe refused the request: a card error (`card_declined`, `authentication_required`)
    /// or an invalid request.
    Refused {
        /// The HTTP status.
        status: u16,
        /// Stripe's error code, if any (`card_declined`).
        code: Option<String>,
        /// Stripe's message.
        message: String,
    },
}

impl std::fmt::Display for StripeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreachable(why) => write!(f, "Stripe unreachable: {why}"),
            Self::Refused {
                status,
                code,
                message,
            } => write!(
                f,
                "Stripe refused ({status}{}): {message}",
                code.as_deref()
                    .map(|c| format!(", {c}"))
                    .unwrap_or_default()
            ),
        }
    }
}

impl std::error::Error for StripeError {}

/// A Stripe customer.
#[derive(Debug, Clone, Deserialize)]
pub struct Customer {
    /// `cus_…`.
    pub id: String,
}

/// A SetupIntent: saving a card for later payments.
#[derive(Debug, Clone, Deserialize)]
pub struct SetupIntent {
    /// `seti_…`.
    pub id: String,
    /// Given to Stripe.js to confirm it on the page.
    pub client_secret: Option<String>,
    /// `requires_payment_method`, `requires_action`, `succeeded`, `canceled`, …
    pub status: String,
    /// Its customer.
    pub customer: Option<String>,
    /// The card saved, once confirmed.
    pub payment_method: Option<String>,
}

/// A card's details as Stripe shows them (never its number).
#[derive(Debug, Clone, Deserialize)]
pub struct CardDetails {
    /// `visa`, `mastercard`, …
    pub brand: String,
    /// The last four digits.
    pub last4: String,
    /// Expiry month.
    pub exp_month: i32,
    /// Expiry year.
    pub exp_year: i32,
}

/// A PaymentMethod.
#[derive(Debug, Clone, Deserialize)]
pub struct PaymentMethod {
    /// `pm_…`.
    pub id: String,
    /// The card, for card methods.
    pub card: Option<CardDetails>,
    /// The customer it is attached to.
    pub customer: Option<String>,
}

/// Why a payment failed.
#[derive(Debug, Clone, Deserialize, Default)]
pub struct PaymentError {
    /// `card_declined`, `authentication_required`, …
    pub code: Option<String>,
    /// Stripe's message.
    pub message: Option<String>,
}

/// A PaymentIntent: one payment.
#[derive(Debug, Clone, Deserialize)]
pub struct PaymentIntent {
    /// `pi_…`.
    pub id: String,
    /// Amount in minor units.
    pub amount: i64,
    /// Lower-case ISO code.
    pub currency: String,
    /// `requires_payment_method`, `requires_confirmation`, `requires_action`, `processing`,
    /// `requires_capture`, `succeeded`, `canceled`.
    pub status: String,
    /// Given to Stripe.js to confirm or authenticate it on the page.
    pub client_secret: Option<String>,
    /// Its customer.
    pub customer: Option<String>,
    /// Berth's record (`berth_payment`).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// Why the last attempt failed.
    pub last_payment_error: Option<PaymentError>,
    /// Its latest charge (`ch_…`), once it was charged: what the balance transactions name.
    #[serde(default, deserialize_with = "id_or_object")]
    pub latest_charge: Option<String>,
}

/// An id, or the object it names when Stripe expanded it.
fn id_or_object<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum IdOrObject {
        Id(String),
        Object { id: String },
    }
    Ok(
        Option::<IdOrObject>::deserialize(de)?.map(|value| match value {
            IdOrObject::Id(id) | IdOrObject::Object { id } => id,
        }),
    )
}

/// A refund.
#[derive(Debug, Clone, Deserialize)]
pub struct Refund {
    /// `re_…`.
    pub id: String,
    /// Amount in minor units.
    pub amount: i64,
    /// `pending`, `succeeded`, `failed`, …
    pub status: Option<String>,
}

/// A balance transaction (a charge or a refund as it reached the account's balance).
#[derive(Debug, Clone, Deserialize)]
pub struct BalanceTransaction {
    /// `txn_…`.
    pub id: String,
    /// Signed amount in minor units (refunds negative).
    pub amount: i64,
    /// Lower-case ISO code.
    pub currency: String,
    /// `charge`, `refund`, …
    #[serde(rename = "type")]
    pub kind: String,
    /// The charge or refund it came from.
    pub source: Option<String>,
    /// Unix seconds.
    pub created: i64,
}

#[derive(Deserialize)]
struct List<T> {
    data: Vec<T>,
    #[serde(default)]
    has_more: bool,
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    code: Option<String>,
    message: Option<String>,
}

/// The client.
#[derive(Debug, Clone)]
pub struct StripeClient {
    http: reqwest::Client,
    settings: StripeSettings,
}

impl StripeClient {
    /// A client for `settings`.
    pub fn new(settings: StripeSettings) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a TLS backend");
        Self { http, settings }
    }

    /// The settings it uses.
    pub fn settings(&self) -> &StripeSettings {
        &self.settings
    }

    async fn call<T: for<'de> Deserialize<'de>>(
        &self,
        method: reqwest::Method,
        path: &str,
        form: &[(&str, String)],
        idempotency_key: Option<&str>,
    ) -> Result<T, StripeError> {
        let url = format!("{}{path}", self.settings.api_base.trim_end_matches('/'));
        let mut request = self
            .http
            .request(method.clone(), url)
            .bearer_auth(&self.settings.secret_key);
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        request = if method == reqwest::Method::GET {
            request.query(form)
        } else {
            request.form(form)
        };
        let response = request
            .send()
            .await
            .map_err(|e| StripeError::Unreachable(e.to_string()))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| StripeError::Unreachable(e.to_string()))?;
        if status.is_success() {
            return serde_json::from_slice(&body)
                .map_err(|e| StripeError::Unreachable(format!("{path}: {e}")));
        }
        let detail = serde_json::from_slice::<ErrorBody>(&body).ok();
        Err(StripeError::Refused {
            status: status.as_u16(),
            code: detail.as_ref().and_then(|d| d.error.code.clone()),
            message: detail
                .and_then(|d| d.error.message)
                .unwrap_or_else(|| format!("HTTP {status}")),
        })
    }

    /// Creates the customer of Berth user `user_id`.
    pub async fn create_customer(
        &self,
        user_id: i64,
        email: &str,
        name: &str,
    ) -> Result<Customer, StripeError> {
        self.call(
            reqwest::Method::POST,
            "/v1/customers",
            &[
                ("email", email.to_owned()),
                ("name", name.to_owned()),
                ("metadata[berth_user]", user_id.to_string()),
            ],
            Some(&format!("berth-customer-{user_id}")),
        )
        .await
    }

    /// Starts saving a card for `customer`, for payments made later without the holder.
    pub async fn create_setup_intent(&self, customer: &str) -> Result<SetupIntent, StripeError> {
        self.call(
            reqwest::Method::POST,
            "/v1/setup_intents",
            &[
                ("customer", customer.to_owned()),
                ("usage", "off_session".to_owned()),
                ("payment_method_types[]", "card".to_owned()),
            ],
            None,
        )
        .await
    }

    /// A SetupIntent as Stripe holds it.
    pub async fn setup_intent(&self, id: &str) -> Result<SetupIntent, StripeError> {
        self.call(
            reqwest::Method::GET,
            &format!("/v1/setup_intents/{}", path_id(id)?),
            &[],
            None,
        )
        .await
    }

    /// A PaymentMethod as Stripe holds it.
    pub async fn payment_method(&self, id: &str) -> Result<PaymentMethod, StripeError> {
        self.call(
            reqwest::Method::GET,
            &format!("/v1/payment_methods/{}", path_id(id)?),
            &[],
            None,
        )
        .await
    }

    /// Attaches a card to a customer.
    pub async fn attach(&self, method: &str, customer: &str) -> Result<PaymentMethod, StripeError> {
        self.call(
            reqwest::Method::POST,
            &format!("/v1/payment_methods/{}/attach", path_id(method)?),
            &[("customer", customer.to_owned())],
            Some(&format!("berth-attach-{method}-{customer}")),
        )
        .await
    }

    /// Detaches a card from its customer: it can no longer be charged.
    pub async fn detach(&self, method: &str) -> Result<PaymentMethod, StripeError> {
        self.call(
            reqwest::Method::POST,
            &format!("/v1/payment_methods/{}/detach", path_id(method)?),
            &[],
            None,
        )
        .await
    }

    /// Creates and confirms a payment of `amount_minor` on a saved card. `off_session`: the
    /// holder is not there (the payment job); a bank that asks for authentication then leaves
    /// it `requires_action` or refuses it. `record` is Berth's record of it, also the
    /// idempotency key.
    pub async fn charge_card(&self, charge: &CardCharge<'_>) -> Result<PaymentIntent, StripeError> {
        let mut form = vec![
            ("amount", charge.amount_minor.to_string()),
            ("currency", charge.currency.to_ascii_lowercase()),
            ("customer", charge.customer.to_owned()),
            ("payment_method", charge.payment_method.to_owned()),
            ("confirm", "true".to_owned()),
            ("metadata[berth_payment]", charge.record.to_owned()),
        ];
        if charge.off_session {
            form.push(("off_session", "true".to_owned()));
        }
        self.call(
            reqwest::Method::POST,
            "/v1/payment_intents",
            &form,
            Some(&format!("berth-payment-{}", charge.record)),
        )
        .await
    }

    /// A PaymentIntent as Stripe holds it.
    pub async fn payment_intent(&self, id: &str) -> Result<PaymentIntent, StripeError> {
        self.call(
            reqwest::Method::GET,
            &format!("/v1/payment_intents/{}", path_id(id)?),
            &[],
            None,
        )
        .await
    }

    /// Refunds `amount_minor` of a payment to its card; `record` is Berth's record of the
    /// refund (the idempotency key).
    pub async fn refund(
        &self,
        payment_intent: &str,
        amount_minor: i64,
        record: &str,
    ) -> Result<Refund, StripeError> {
        self.call(
            reqwest::Method::POST,
            "/v1/refunds",
            &[
                ("payment_intent", payment_intent.to_owned()),
                ("amount", amount_minor.to_string()),
                ("metadata[berth_refund]", record.to_owned()),
            ],
            Some(&format!("berth-refund-{record}")),
        )
        .await
    }

    /// Balance transactions created at or after `since` (Unix seconds), newest first, at most
    /// `limit` pages of 100.
    pub async fn balance_transactions(
        &self,
        since: i64,
        pages: usize,
    ) -> Result<Vec<BalanceTransaction>, StripeError> {
        // Newest first; read until a page reaches back before `since` (not every Stripe-compatible
        // server filters by `created`).
        let mut out: Vec<BalanceTransaction> = Vec::new();
        for _ in 0..pages {
            let mut query = vec![("limit", "100".to_owned())];
            if let Some(last) = out.last() {
                query.push(("starting_after", last.id.clone()));
            }
            let page: List<BalanceTransaction> = self
                .call(
                    reqwest::Method::GET,
                    "/v1/balance_transactions",
                    &query,
                    None,
                )
                .await?;
            let more = page.has_more
                && !page.data.is_empty()
                && page.data.iter().all(|txn| txn.created >= since);
            out.extend(page.data);
            if !more {
                break;
            }
        }
        out.retain(|txn| txn.created >= since);
        Ok(out)
    }
}

/// A payment on a saved card.
#[derive(Debug, Clone)]
pub struct CardCharge<'a> {
    /// Minor units.
    pub amount_minor: i64,
    /// ISO code.
    pub currency: &'a str,
    /// `cus_…`.
    pub customer: &'a str,
    /// `pm_…`.
    pub payment_method: &'a str,
    /// Whether the holder is absent.
    pub off_session: bool,
    /// Berth's record of it (`card_payments.id` as `cp_…`).
    pub record: &'a str,
}

/// An id that goes into a URL path: Stripe's ids are letters, digits and underscores.
fn path_id(id: &str) -> Result<&str, StripeError> {
    if !id.is_empty()
        && id.len() <= 255
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        Ok(id)
    } else {
        Err(StripeError::Refused {
            status: 400,
            code: Some("invalid_id".to_owned()),
            message: "not a Stripe id".to_owned(),
        })
    }
}

/// Why a webhook was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookRefusal {
    /// No `Stripe-Signature`, or one that cannot be read.
    Malformed,
    /// Its timestamp is too far from now (a replay).
    Stale,
    /// No signature matches the endpoint's secret.
    BadSignature,
}

/// Verifies a webhook: `header` is its `Stripe-Signature` (`t=…,v1=…[,v1=…]`), `payload` the
/// body exactly as received, `now` Unix seconds. Stripe signs `"{t}.{payload}"` with
/// HMAC-SHA256 under the endpoint's secret; any `v1` may match (secrets being rolled).
pub fn verify_webhook(
    payload: &[u8],
    header: &str,
    secret: &str,
    now: i64,
) -> Result<(), WebhookRefusal> {
    let mut timestamp: Option<i64> = None;
    let mut signatures: Vec<Vec<u8>> = Vec::new();
    for part in header.split(',') {
        let (key, value) = part
            .trim()
            .split_once('=')
            .ok_or(WebhookRefusal::Malformed)?;
        match key {
            "t" => timestamp = Some(value.parse().map_err(|_| WebhookRefusal::Malformed)?),
            "v1" => signatures.push(hex::decode(value).map_err(|_| WebhookRefusal::Malformed)?),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(WebhookRefusal::Malformed)?;
    if signatures.is_empty() {
        return Err(WebhookRefusal::Malformed);
    }
    if (now - timestamp).abs() > WEBHOOK_TOLERANCE_SECONDS {
        return Err(WebhookRefusal::Stale);
    }
    for signature in signatures {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
            .expect("HMAC takes keys of any length");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(payload);
        if mac.verify_slice(&signature).is_ok() {
            return Ok(());
        }
    }
    Err(WebhookRefusal::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(payload: &[u8], secret: &str, t: i64) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{t}.").as_bytes());
        mac.update(payload);
        format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
    }

    #[test]
    fn a_webhook_signed_with_the_secret_is_accepted_and_nothing_else_is() {
        let body = br#"{"id":"evt_1","type":"payment_intent.succeeded"}"#;
        let header = sign(body, "whsec_test", 1_000);
        assert_eq!(verify_webhook(body, &header, "whsec_test", 1_010), Ok(()));
        // Another secret, another body, another time.
        assert_eq!(
            verify_webhook(body, &header, "whsec_other", 1_010),
            Err(WebhookRefusal::BadSignature)
        );
        assert_eq!(
            verify_webhook(b"{\"id\":\"evt_2\"}", &header, "whsec_test", 1_010),
            Err(WebhookRefusal::BadSignature)
        );
        let moved = header.replace("t=1000", "t=1001");
        assert_eq!(
            verify_webhook(body, &moved, "whsec_test", 1_010),
            Err(WebhookRefusal::BadSignature)
        );
        // A replay long after.
        assert_eq!(
            verify_webhook(
                body,
                &header,
                "whsec_test",
                1_000 + WEBHOOK_TOLERANCE_SECONDS + 1
            ),
            Err(WebhookRefusal::Stale)
        );
        // Rolled secrets: a second v1 may match.
        let two = format!(
            "{},v1={}",
            sign(body, "whsec_old", 1_000),
            &header[header.find("v1=").unwrap() + 3..]
        );
        assert_eq!(verify_webhook(body, &two, "whsec_test", 1_000), Ok(()));
    }

    #[test]
    fn unreadable_signature_headers_are_refused() {
        for header in ["", "t=1", "v1=00", "t=x,v1=00", "t=1,v1=zz", "garbage"] {
            assert_eq!(
                verify_webhook(b"{}", header, "s", 1),
                Err(WebhookRefusal::Malformed),
                "{header}"
            );
        }
    }

    #[test]
    fn ids_going_into_paths_are_stripe_ids() {
        assert!(path_id("pi_123abc").is_ok());
        for bad in ["", "../v1/charges", "pi_1?x=1", "pi 1", &"a".repeat(256)] {
            assert!(path_id(bad).is_err(), "{bad}");
        }
    }
}
