//! The tables of the server-rendered pages: a scrolling box, a header row of column names and
//! the rows the page passes as children.

use leptos::prelude::*;

/// One column's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    label: String,
    numeric: bool,
    hidden: bool,
}

impl Column {
    /// A column of text.
    pub fn text(label: impl std::fmt::Display) -> Self {
        Self {
            label: label.to_string(),
            numeric: false,
            hidden: false,
        }
    }

    /// A column of numbers (right-aligned).
    pub fn num(label: impl std::fmt::Display) -> Self {
        Self {
            numeric: true,
            ..Self::text(label)
        }
    }

    /// The column of a row's buttons: its name is read to screen readers only.
    pub fn actions(label: impl std::fmt::Display) -> Self {
        Self {
            hidden: true,
            ..Self::text(label)
        }
    }
}

/// A table with `class`, headed by `columns`; the rows are the children.
#[component]
pub fn DataTable(class: &'static str, columns: Vec<Column>, children: Children) -> impl IntoView {
    let headers = columns
        .into_iter()
        .map(|column| {
            let class = column.numeric.then_some("num");
            if column.hidden {
                view! { <th scope="col" class=class><span class="sr-only">{column.label}</span></th> }
                    .into_any()
            } else {
                view! { <th scope="col" class=class>{column.label}</th> }.into_any()
            }
        })
        .collect_view();
    view! {
        <div class="table-scroll">
            <table class=class>
                <thead>
                    <tr>{headers}</tr>
                </thead>
                <tbody>{children()}</tbody>
            </table>
        </div>
    }
}

/// A button that posts a plain form to the server function at `action` with the hidden
/// `fields`: it works without JavaScript, and the function answers with the page again.
#[component]
pub fn PostButton(
    action: &'static str,
    fields: Vec<(&'static str, String)>,
    /// Styled as a destructive action.
    #[prop(optional)]
    danger: bool,
    children: Children,
) -> impl IntoView {
    let hidden = fields
        .into_iter()
        .map(|(name, value)| view! { <input type="hidden" name=name value=value /> })
        .collect_view();
    view! {
        <form method="post" action=action class="inline-form">
            {hidden}
            <button type="submit" class=danger.then_some("button-danger")>{children()}</button>
        </form>
    }
}

/// The links between the pages of a long list: back to the newest page when this is a later one,
/// and on to the next (older) one when there is more. `base` is the list's address with any
/// filters (`?…` included when it has some); the cursor is added to it. A list read oldest first
/// (`ascending`) says "Next" and "First" instead.
#[component]
pub fn PageLinks(
    /// The next page's cursor.
    next: Option<String>,
    /// Whether this page is not the first.
    on_later_page: bool,
    /// The list's address, with its filters.
    #[prop(into)]
    base: String,
    /// The list is read oldest first.
    #[prop(optional)]
    ascending: bool,
) -> impl IntoView {
    use crate::i18n::*;
    let i18n = use_i18n();
    if next.is_none() && !on_later_page {
        return None;
    }
    let joiner = if base.contains('?') { '&' } else { '?' };
    let older = next.map(|cursor| {
        let href = format!("{base}{joiner}cursor={cursor}");
        let label = if ascending {
            t_string!(i18n, pager_next).to_string()
        } else {
            t_string!(i18n, pager_older).to_string()
        };
        view! { <a class="pager-older" rel="next" href=href>{label}</a> }
    });
    let newest = on_later_page.then(|| {
        let href = base.clone();
        let label = if ascending {
            t_string!(i18n, pager_first).to_string()
        } else {
            t_string!(i18n, pager_newest).to_string()
        };
        view! { <a class="pager-newest" href=href>{label}</a> }
    });
    Some(
        view! { <nav class="pager" aria-label=t_string!(i18n, pager_label).to_string()>{newest}" "{older}</nav> },
    )
}
