//! Generates the `i18n` module (typed translation keys, `t!`, locale detection) from `locales/`.

use leptos_i18n_build::{Config, ParseOptions, TranslationsInfos};
use std::error::Error;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo::rerun-if-changed=build.rs");
    let out_dir = std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?;
    let module_dir = PathBuf::from(out_dir).join("i18n");

    // `interpolate_display`: `t_string!` with arguments, for attributes such as `aria-label`.
    let config = Config::new("en")?
        .add_locale("pt-BR")?
        .parse_options(ParseOptions::new().interpolate_display(true));
    let translations = TranslationsInfos::parse(config)?;
    translations.emit_diagnostics();
    translations.rerun_if_locales_changed();
    translations.generate_i18n_module(module_dir)?;
    Ok(())
}
