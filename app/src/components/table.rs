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
