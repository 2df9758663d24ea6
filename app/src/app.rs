//! The root component, the HTML shell and the routes.

use crate::components::layout::{Footer, Header};
use crate::i18n::*;
use crate::pages::{
    calendar::CalendarPage, gpu::GpuDetailPage, inventory::InventoryPage,
    maintenance::MaintenancePage, nodes::NodesAdminPage, not_found::NotFoundPage,
    profile::ProfilePage, reservations::ReservationsPage, sign_in::SignInPage,
};
use leptos::prelude::*;
use leptos_meta::{MetaTags, Title, provide_meta_context};
use leptos_router::{
    Lazy, LazyRoute, ParamSegment, SsrMode, StaticSegment,
    components::{Route, Router, Routes},
    lazy_route,
};

/// The HTML document around [`App`], rendered on the server.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html>
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <AutoReload options=options.clone() />
                <HydrationScripts options />
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
                        <Route path=StaticSegment("") view={Lazy::<InventoryRoute>::new()} ssr=SsrMode::Async />
                        <Route
                            path=(StaticSegment("gpus"), ParamSegment("id"))
                            view={Lazy::<GpuRoute>::new()}
                            ssr=SsrMode::Async
                        />
                        <Route path=StaticSegment("signin") view={Lazy::<SignInRoute>::new()} ssr=SsrMode::Async />
                        <Route path=StaticSegment("calendar") view={Lazy::<CalendarRoute>::new()} ssr=SsrMode::Async />
                        <Route path=StaticSegment("reservations") view={Lazy::<ReservationsRoute>::new()} ssr=SsrMode::Async />
                        <Route path=StaticSegment("profile") view={Lazy::<ProfileRoute>::new()} ssr=SsrMode::Async />
                        <Route
                            path=(StaticSegment("admin"), StaticSegment("maintenance"))
                            view={Lazy::<MaintenanceRoute>::new()}
                            ssr=SsrMode::Async
                        />
                        <Route
                            path=(StaticSegment("admin"), StaticSegment("nodes"))
                            view={Lazy::<NodesRoute>::new()}
                            ssr=SsrMode::Async
                        />
                    </Routes>
                </main>
                <Footer />
            </Router>
        </I18nContextProvider>
    }
}

// Each page's view code is split into its own WASM chunk (`cargo leptos build --split`): a page
// loads the shared runtime and its own code, not every page's.
macro_rules! lazy_page {
    ($(#[doc = $doc:expr] $route:ident => $page:ident,)*) => {$(
        #[doc = $doc]
        #[derive(Debug, Clone, Copy)]
        pub struct $route;

        #[lazy_route]
        impl LazyRoute for $route {
            fn data() -> Self {
                $route
            }

            fn view(_this: Self) -> AnyView {
                view! { <$page /> }.into_any()
            }
        }
    )*};
}

lazy_page! {
    /// The GPU inventory, loaded on demand.
    InventoryRoute => InventoryPage,
    /// One GPU's live values and history, loaded on demand.
    GpuRoute => GpuDetailPage,
    /// Sign-in, loaded on demand.
    SignInRoute => SignInPage,
    /// The calendar, loaded on demand.
    CalendarRoute => CalendarPage,
    /// My reservations, loaded on demand.
    ReservationsRoute => ReservationsPage,
    /// The profile, loaded on demand.
    ProfileRoute => ProfilePage,
    /// Maintenance (platform admins), loaded on demand.
    MaintenanceRoute => MaintenancePage,
    /// Nodes and their agents' tokens (platform admins), loaded on demand.
    NodesRoute => NodesAdminPage,
}
