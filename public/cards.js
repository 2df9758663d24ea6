// The wallet page's cards, and a booking's payment by card on its page (served as /cards.js;
// only where card payments are on).
//
// Stripe.js draws the card field in its own frame, so the card number goes to Stripe and never
// to Berth. This script asks Berth's API for a SetupIntent, lets Stripe.js confirm it with the
// card typed, and hands the SetupIntent's id back to Berth, which reads the card from Stripe.
// A top-up asks Berth to charge a saved card; when the bank wants the holder to authenticate,
// Stripe.js shows it; the credits arrive when Stripe's webhook reaches Berth, so the script
// waits for the payment to settle and then reloads the page. A booking whose payment is due is
// paid the same way from its page. Every text it shows comes from the page (data-msg-*), in the
// reader's language.
(function () {
  "use strict";
  const section = document.getElementById("cards") || document.getElementById("card-payment");
  if (!section) return;
  const status = section.querySelector(".cards-status");
  const say = (text, kind) => {
    status.textContent = text;
    status.dataset.kind = kind || "info";
  };
  const msg = (name) => section.dataset["msg" + name.charAt(0).toUpperCase() + name.slice(1)];

  // Berth's API: JSON in and out, the session cookie, the answer's message on failure.
  async function api(method, path, body) {
    const response = await fetch(path, {
      method,
      credentials: "same-origin",
      headers: body ? { "content-type": "application/json" } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await response.text();
    const data = text ? JSON.parse(text) : null;
    if (!response.ok) {
      const message = (data && (data.message || data.error)) || response.statusText;
      throw new Error(response.status === 503 ? msg("unavailable") : message);
    }
    return data;
  }

  let stripe = null;
  let card = null;
  function loadStripe() {
    if (stripe) return Promise.resolve(stripe);
    return new Promise((resolve, reject) => {
      const done = () => {
        stripe = window.Stripe(section.dataset.publishableKey);
        resolve(stripe);
      };
      if (window.Stripe) return done();
      const script = document.createElement("script");
      script.src = section.dataset.jsUrl;
      script.onload = done;
      script.onerror = () => reject(new Error(msg("unavailable")));
      document.head.appendChild(script);
    });
  }

  // Adding a card: the field appears on the first press; each save asks Berth for a fresh
  // SetupIntent (a refused card cancels the one it was tried with).
  const addForm = section.querySelector(".add-card-form");
  if (addForm) addForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = addForm.querySelector("button");
    button.disabled = true;
    try {
      await loadStripe();
      if (!card) {
        card = stripe.elements().create("card");
        card.mount(addForm.querySelector(".card-element"));
        addForm.classList.add("open");
        button.textContent = msg("save");
        button.classList.replace("button-secondary", "button-primary");
        return;
      }
      say(msg("working"));
      const setup = await api("POST", "/api/v1/cards/setup");
      const result = await stripe.confirmCardSetup(setup.client_secret, {
        payment_method: { card },
      });
      if (result.error) throw new Error(result.error.message);
      await api("POST", "/api/v1/cards", { setup_intent_id: setup.setup_intent_id });
      say(msg("saved"), "ok");
      window.location.reload();
    } catch (error) {
      say(error.message, "error");
    } finally {
      button.disabled = false;
    }
  });

  // Removing a card.
  section.querySelectorAll(".card-remove").forEach((button) => {
    button.addEventListener("click", async () => {
      if (!window.confirm(msg("remove"))) return;
      button.disabled = true;
      try {
        await api("DELETE", "/api/v1/cards/" + button.dataset.card);
        window.location.reload();
      } catch (error) {
        say(error.message, "error");
        button.disabled = false;
      }
    });
  });

  // A decimal amount in the currency's minor units, or null.
  function minorUnits(raw) {
    const exponent = Number(section.dataset.exponent);
    const pattern = exponent > 0 ? new RegExp("^\\d+([.,]\\d{1," + exponent + "})?$") : /^\d+$/;
    const text = String(raw).trim();
    if (!pattern.test(text)) return null;
    const [whole, fraction = ""] = text.replace(",", ".").split(".");
    const minor = Number(whole) * 10 ** exponent + Number(fraction.padEnd(exponent, "0") || 0);
    return Number.isSafeInteger(minor) ? minor : null;
  }

  // Waits until Stripe's word on the payment reached Berth (its webhook): succeeded or failed,
  // up to a minute. Right after the bank's check Berth may still hold it as waiting for it.
  const open = (payment) => payment.status === "pending" || payment.status === "requires_action";
  async function settled(id) {
    for (let i = 0; i < 60; i++) {
      const payment = await api("GET", "/api/v1/payments/" + id);
      if (!open(payment)) return payment;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    return null;
  }

  // After Berth answered a payment: the bank's check when it asks for one, then Stripe's word
  // (which reaches Berth by webhook: `wait` polls for it), then the page again.
  async function finish(payment, wait) {
    if (payment.status === "requires_action") {
      await loadStripe();
      const result = await stripe.confirmCardPayment(payment.client_secret);
      if (result.error) throw new Error(result.error.message);
    } else if (payment.status === "failed") {
      throw new Error(msg("failed") + " " + (payment.failure || ""));
    }
    say(msg("waiting"));
    const done = await wait();
    if (done && done.status === "failed") throw new Error(msg("failed") + " " + (done.failure || ""));
    if (done && done.status === "succeeded") say(msg("paid"), "ok");
    window.location.reload();
  }

  const topUp = section.querySelector(".top-up-form");
  if (topUp) {
    topUp.addEventListener("submit", async (event) => {
      event.preventDefault();
      const amount = minorUnits(topUp.elements.amount.value);
      const min = Number(section.dataset.minMinor);
      const max = Number(section.dataset.maxMinor);
      if (amount === null || amount < min || amount > max) {
        say(msg("amount"), "error");
        topUp.elements.amount.focus();
        return;
      }
      const button = topUp.querySelector("button");
      button.disabled = true;
      try {
        say(msg("working"));
        const payment = await api("POST", "/api/v1/top-ups", {
          card_id: Number(topUp.elements.card.value),
          amount_minor: amount,
        });
        await finish(payment, () => settled(payment.id));
      } catch (error) {
        say(error.message, "error");
      } finally {
        button.disabled = false;
      }
    });
  }

  // A booking's payment by card: pay it now with a saved card (the payment under way is
  // answered instead when there is one, to authenticate); then wait for Stripe's confirmation.
  async function bookingPaid(reservation, waitingFor = open) {
    for (let i = 0; i < 60; i++) {
      const payment = await api("GET", "/api/v1/reservations/" + reservation + "/card-payment");
      if (!waitingFor(payment)) return payment;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    return null;
  }
  const payForm = section.querySelector(".booking-card-form");
  if (payForm) {
    payForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      const button = payForm.querySelector("button");
      button.disabled = true;
      const reservation = payForm.dataset.reservation;
      try {
        say(msg("working"));
        const payment = await api("POST", "/api/v1/reservations/" + reservation + "/card-payment", {
          card_id: Number(payForm.elements.card.value),
        });
        await finish(payment, () => bookingPaid(reservation));
      } catch (error) {
        say(error.message, "error");
      } finally {
        button.disabled = false;
      }
    });
  }
  // A payment under way when the page opened (booked by card a moment ago): the page follows
  // it and shows the outcome.
  if (section.dataset.openPayment && section.dataset.reservation) {
    say(msg("waiting"));
    bookingPaid(section.dataset.reservation, (payment) => payment.status === "pending")
      .then((done) => {
        if (done) window.location.reload();
      })
      .catch((error) => say(error.message, "error"));
  }
  // The forms are handled from here on (a press before this would post the plain form).
  section.dataset.ready = "true";
})();
