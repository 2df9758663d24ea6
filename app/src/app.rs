//! The root component, the HTML shell and the routes.

use crate::components::layout::{Footer, Header};
use crate::i18n::*;
use crate::pages::{
    audit::AuditPage,
    calendar::CalendarPage,
    credits::CreditsPage,
    deliveries::DeliveriesPage,
    env_profiles::{ProfileDetailPage, ProfilesPage},
    fleet::FleetPage,
    gpu::GpuDetailPage,
    inbox::InboxPage,
    incident::{IncidentDetailPage, IncidentsPage},
    inventory::InventoryPage,
    maintenance::MaintenancePage,
    nodes::NodesAdminPage,
    not_found::NotFoundPage,
    payments::PaymentsPage,
    profile::ProfilePage,
    reports::{FleetReportPage, ReportsPage},
    reservation::ReservationPage,
    reservations::ReservationsPage,
    sign_in::SignInPage,
    team::TeamPage,
    teams::TeamsPage,
    wallet::WalletPage,
    watches::WatchesPage,
};
use leptos::prelude::*;
use leptos_meta::{MetaTags, Title, provide_meta_context};
use leptos_router::{
    ParamSegment, SsrMode, StaticSegment,
    components::{Route, Router, Routes},
};

/// The HTML document around [`App`], rendered on the server.
///
/// The inline hydration script carries the Content Security Policy nonce the server's security
/// headers middleware made for this response (a request extension): provided here, Leptos's
/// `HydrationScripts` and `leptos_meta` use it instead of one of their own.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(nonce) = use_context::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<leptos::nonce::Nonce>().cloned())
    {
        provide_context(nonce);
    }
    view! {
        <!DOCTYPE html>
        <html>
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <AutoReload options=options.clone() />
                <HydrationScripts options islands=true />
                <link rel="stylesheet" id="leptos" href="/pkg/berth.css" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// The application: translations, layout and routes.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();

    view! {
        <Title formatter=|title: String| {
            if title.is_empty() { "Berth".to_owned() } else { format!("{title} · Berth") }
        } />
        <I18nContextProvider>
            <Router>
                <Header />
                <main id="main" tabindex="-1">
                    <Routes fallback=NotFoundPage>
                        // Async: the server sends the finished page, so it reads without JavaScript.
                        <Route path=StaticSegment("") view=InventoryPage ssr=SsrMode::Async />
                        <Route
                            path=(StaticSegment("gpus"), ParamSegment("id"))
                            view=GpuDetailPage
                            ssr=SsrMode::Async
                        />
                        <Route path=StaticSegment("signin") view=SignInPage ssr=SsrMode::Async />
                        <Route path=StaticSegment("calendar") view=CalendarPage ssr=SsrMode::Async />
                        <Route path=StaticSegment("reservations") view=ReservationsPage ssr=SsrMode::Async />
                        <Route
                            path=(StaticSegment("reservations"), ParamSegment("id"))
                            view=ReservationPage
                            ssr=SsrMode::Async
                        />
                        <Route path=StaticSegment("incidents") view=IncidentsPage ssr=SsrMode::Async />
                        <Route
                            path=(StaticSegment("incidents"), ParamSegment("id"))
                            view=IncidentDetailPage
                            ssr=SsrMode::Async
                        />
                        <Route path=StaticSegment("wallet") view=WalletPage ssr=SsrMode::Async />
                        <Route path=StaticSegment("inbox") view=InboxPage ssr=SsrMode::Async />
                        <Route path=StaticSegment("watches") view=WatchesPage ssr=SsrMode::Async />
                        <Route path=StaticSegment("profile") view=ProfilePage ssr=SsrMode::Async />
                        <Route path=StaticSegment("profiles") view=ProfilesPage ssr=SsrMode::Async />
                        <Route
                            path=(StaticSegment("profiles"), ParamSegment("id"))
                            view=ProfileDetailPage
                            ssr=SsrMode::Async
                        />
                        <Route
                            path=(StaticSegment("admin"), StaticSegment("maintenance"))
                            view=MaintenancePage
                            ssr=SsrMode::Async
                        />
                        <Route
                            path=(StaticSegment("admin"), StaticSegment("credits"))
                            view=CreditsPage
                            ssr=SsrMode::Async
                        />
                        <Route
                            path=(StaticSegment("admin"), StaticSegment("payments"))
                            view=PaymentsPage
                            ssr=SsrMode::Async
                        />
                        <Route
                            path=(StaticSegment("admin"), StaticSegment("nodes"))
                            view=NodesAdminPage
                            ssr=SsrMode::Async
                        />
                        <Route
                            path=(StaticSegment("admin"), StaticSegment("fleet"))
                            view=FleetPage
                            ssr=SsrMode::Async
                        />
                        <Route
                            path=(StaticSegment("admin"), StaticSegment("deliveries"))
                            view=DeliveriesPage
                            ssr=SsrMode::Async
                        />
                        <Route
                            path=(StaticSegment("admin"), StaticSegment("audit"))
                            view=AuditPage
                            ssr=SsrMode::Async
                        />
                        <Route path=StaticSegment("reports") view=ReportsPage ssr=SsrMode::Async />
                        <Route
                            path=(StaticSegment("reports"), StaticSegment("fleet"))
                            view=FleetReportPage
                            ssr=SsrMode::Async
                        />
                        <Route path=StaticSegment("teams") view=TeamsPage ssr=SsrMode::Async />
                        <Route
                            path=(StaticSegment("teams"), ParamSegment("id"))
                            view=TeamPage
                            ssr=SsrMode::Async
                        />
                    </Routes>
                </main>
                <Footer />
            </Router>
        </I18nContextProvider>
    }
}
