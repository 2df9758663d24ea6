//! A fake but stateful Stripe for the card-payment tests: `localstripe` (PyPI) on a free
//! loopback port, started by `fixtures/localstripe_server.py` with nothing kept on disk.
//! `scripts/test.sh` installs it in `.tools/venv`. The helpers also do what Stripe.js does in
//! the browser (confirm a SetupIntent with a card number, authenticate a payment), since the
//! card number never reaches Berth.

use super::python_fixture;
use serde_json::Value;
use std::process::Child;

/// The keys the tests give Berth.
pub(crate) const STRIPE_SECRET_KEY: &str = "sk_test_berth";
/// See [`STRIPE_SECRET_KEY`].
pub(crate) const STRIPE_PUBLISHABLE_KEY: &str = "pk_test_berth";
/// See [`STRIPE_SECRET_KEY`].
pub(crate) const STRIPE_WEBHOOK_SECRET: &str = "whsec_test_berth";

/// A running localstripe; stopped when dropped.
pub(crate) struct LocalStripe {
    pub base: String,
    child: Child,
    http: reqwest::Client,
}

impl Drop for LocalStripe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl LocalStripe {
    /// Starts it and waits until it answers.
    pub(crate) async fn start() -> Self {
        let (child, port) = python_fixture(
            "localstripe_server.py",
            &[],
            "is localstripe installed in .tools/venv? (scripts/test.sh installs it)",
        );
        let server = Self {
            base: format!("http://127.0.0.1:{port}"),
            child,
            http: reqwest::Client::new(),
        };
        for _ in 0..200 {
            if let Ok(response) = server
                .http
                .get(format!("{}/v1/customers", server.base))
                .bearer_auth(STRIPE_SECRET_KEY)
                .send()
                .await
                && response.status().is_success()
            {
                return server;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("localstripe did not answer on port {port}");
    }

    /// Points Berth's settings at it.
    pub(crate) fn configure(&self, settings: &mut berth_server::configuration::RawSettings) {
        settings.payments = berth_server::configuration::PaymentsMode::Stripe;
        settings.stripe_api_base = self.base.clone();
        settings.stripe_js_url = format!("{}/js.stripe.com/v3/", self.base);
        settings.stripe_secret_key = Some(STRIPE_SECRET_KEY.to_owned());
        settings.stripe_publishable_key = Some(STRIPE_PUBLISHABLE_KEY.to_owned());
        settings.stripe_webhook_secret = Some(STRIPE_WEBHOOK_SECRET.to_owned());
    }

    /// Sends every event to `url`, signed with the tests' webhook secret.
    pub(crate) async fn send_webhooks_to(&self, url: &str) {
        let response = self
            .http
            .post(format!("{}/_config/webhooks/berth", self.base))
            .form(&[("url", url), ("secret", STRIPE_WEBHOOK_SECRET)])
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "register the webhook");
    }

    async fn post(&self, path: &str, form: &[(&str, &str)]) -> (u16, Value) {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .form(form)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// What Stripe.js does with a card number the holder typed: confirms the SetupIntent with
    /// it, with the publishable key; then, when the bank asks for authentication, confirms it
    /// again (the holder passed 3-D Secure). Answers the SetupIntent's final status.
    pub(crate) async fn confirm_setup(&self, setup: &Value, number: &str) -> String {
        let id = setup["setup_intent_id"].as_str().unwrap();
        let secret = setup["client_secret"].as_str().unwrap();
        let path = format!("/v1/setup_intents/{id}/confirm");
        let (status, body) = self
            .post(
                &path,
                &[
                    ("key", STRIPE_PUBLISHABLE_KEY),
                    ("client_secret", secret),
                    ("payment_method_data[type]", "card"),
                    ("payment_method_data[card][number]", number),
                    ("payment_method_data[card][exp_month]", "12"),
                    ("payment_method_data[card][exp_year]", "2030"),
                    ("payment_method_data[card][cvc]", "123"),
                ],
            )
            .await;
        if status != 200 {
            return body["error"]["code"].as_str().unwrap_or("error").to_owned();
        }
        if body["status"] == "requires_action" {
            let (_, body) = self
                .post(
                    &path,
                    &[("key", STRIPE_PUBLISHABLE_KEY), ("client_secret", secret)],
                )
                .await;
            return body["status"].as_str().unwrap_or_default().to_owned();
        }
        body["status"].as_str().unwrap_or_default().to_owned()
    }

    /// A payment of `amount_minor` made at Stripe without Berth (its dashboard, another app on
    /// the same account): a customer, a card and a confirmed PaymentIntent.
    pub(crate) async fn charge_outside_berth(&self, amount_minor: i64) {
        let secret = |path: &str, form: Vec<(&str, String)>| {
            let request = self
                .http
                .post(format!("{}{path}", self.base))
                .bearer_auth(STRIPE_SECRET_KEY)
                .form(&form);
            let path = path.to_owned();
            async move {
                let response = request.send().await.unwrap();
                assert!(response.status().is_success(), "{path}");
                response.json::<Value>().await.unwrap()
            }
        };
        let customer = secret("/v1/customers", vec![]).await;
        let method = secret(
            "/v1/payment_methods",
            vec![
                ("type", "card".to_owned()),
                ("card[number]", "4242424242424242".to_owned()),
                ("card[exp_month]", "12".to_owned()),
                ("card[exp_year]", "2030".to_owned()),
                ("card[cvc]", "123".to_owned()),
            ],
        )
        .await;
        let customer_id = customer["id"].as_str().unwrap().to_owned();
        let method_id = method["id"].as_str().unwrap().to_owned();
        secret(
            &format!("/v1/payment_methods/{method_id}/attach"),
            vec![("customer", customer_id.clone())],
        )
        .await;
        let intent = secret(
            "/v1/payment_intents",
            vec![
                ("amount", amount_minor.to_string()),
                ("currency", "usd".to_owned()),
                ("customer", customer_id),
                ("payment_method", method_id),
                ("confirm", "true".to_owned()),
            ],
        )
        .await;
        assert_eq!(intent["status"], "succeeded", "{intent}");
    }

    /// What Stripe.js does when a payment needs the holder's authentication: the holder
    /// passes (or fails) 3-D Secure.
    pub(crate) async fn authenticate(&self, intent_secret: &str, success: bool) -> Value {
        let intent = intent_secret.split("_secret_").next().unwrap();
        let (status, body) = self
            .post(
                &format!("/v1/payment_intents/{intent}/_authenticate"),
                &[
                    ("key", STRIPE_PUBLISHABLE_KEY),
                    ("client_secret", intent_secret),
                    ("success", if success { "true" } else { "false" }),
                ],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }
}

/// A webhook event as Stripe would sign it with `secret` at Unix time `t`: the body and its
/// `Stripe-Signature`.
pub(crate) fn signed_event(event: &Value, secret: &str, t: i64) -> (String, String) {
    use hmac::Mac;
    let body = event.to_string();
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{body}").as_bytes());
    let signature = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>();
    (body, format!("t={t},v1={signature}"))
}

/// Starts the portal with card payments on `stripe` (both stores' tests), Stripe's webhooks sent
/// to it.
pub(crate) async fn stripe_portal(
    backend: crate::helpers::Backend,
    stripe: &LocalStripe,
) -> (crate::helpers::TestApp, crate::helpers::TestDatabase) {
    let db = crate::helpers::TestDatabase::create(backend).await;
    let mut settings = crate::helpers::test_settings(&db);
    stripe.configure(&mut settings);
    let app = crate::helpers::spawn_with(settings).await;
    stripe
        .send_webhooks_to(&app.url("/api/v1/stripe/webhook"))
        .await;
    (app, db)
}

/// Saves card `number` for the token's holder as the wallet page does: a SetupIntent from
/// Berth, confirmed by "Stripe.js", handed back to Berth. Answers Berth's answer.
pub(crate) async fn save_card(
    app: &crate::helpers::TestApp,
    stripe: &LocalStripe,
    token: &str,
    number: &str,
) -> (u16, Value) {
    let (status, setup) =
        crate::helpers::post_json(app, token, "/api/v1/cards/setup", &serde_json::json!({})).await;
    assert_eq!(status, 201, "{setup}");
    assert_eq!(setup["publishable_key"], STRIPE_PUBLISHABLE_KEY);
    let confirmed = stripe.confirm_setup(&setup, number).await;
    assert_eq!(confirmed, "succeeded", "Stripe.js confirmed the card");
    crate::helpers::post_json(
        app,
        token,
        "/api/v1/cards",
        &serde_json::json!({ "setup_intent_id": setup["setup_intent_id"] }),
    )
    .await
}
