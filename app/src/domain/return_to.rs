//! Where a browser may be sent back to after a form, a sign-in or a language switch: only a path
//! on this site. Every `return_to` goes through [`local_path`] before it becomes a `Location`, so
//! a link such as `/signin?return_to=//evil.example` cannot turn Berth into a way to reach
//! another site (an open redirect).

/// Where to go when `return_to` is missing or refused.
pub const HOME: &str = "/";

/// Rounds of percent-decoding checked: `%2509` is `%09` once decoded, a tab twice.
const DECODE_ROUNDS: usize = 3;

/// `raw` if it is a path on this site, else `None`.
///
/// Accepted: a relative reference that starts with one `/` (an absolute path, with an optional
/// query and fragment), written in visible ASCII. Refused: a scheme (`https://…`,
/// `javascript:…`), an authority (`//host`), a backslash anywhere (browsers read `/\host` as
/// `//host`), whitespace or control characters, and the same once percent-decoded: control
/// characters anywhere (`/%09/host`: browsers drop tabs and newlines from URLs, which leaves
/// `//host`), whitespace, backslashes and a leading `//` in the path. An encoded space in the
/// query (`?model=NVIDIA%20L40S`) is fine.
pub fn local_path(raw: &str) -> Option<&str> {
    let visible = raw.bytes().all(|byte| (0x21..=0x7e).contains(&byte));
    if !visible || !is_plain_path(raw) {
        return None;
    }
    let split = raw.find(['?', '#']).unwrap_or(raw.len());
    let (path, rest) = raw.split_at(split);
    let path_ok = |decoded: &str| {
        is_plain_path(decoded)
            && !decoded
                .chars()
                .any(|c| c.is_control() || c.is_whitespace() || c == '\\')
    };
    let rest_ok = |decoded: &str| !decoded.chars().any(char::is_control);
    (decodes_to(path, path_ok) && decodes_to(rest, rest_ok)).then_some(raw)
}

/// Whether `text` and each round of percent-decoding it pass `check`.
fn decodes_to(text: &str, check: impl Fn(&str) -> bool) -> bool {
    let mut text = text.to_owned();
    for _ in 0..DECODE_ROUNDS {
        if !text.contains('%') {
            break;
        }
        let decoded = percent_decode(&text);
        if !check(&decoded) {
            return false;
        }
        if decoded == text {
            break;
        }
        text = decoded;
    }
    true
}

/// `raw` if it is a path on this site, else [`HOME`].
pub fn local_path_or_home(raw: Option<&str>) -> String {
    raw.and_then(local_path).unwrap_or(HOME).to_owned()
}

/// Starts with exactly one `/` and holds no backslash.
fn is_plain_path(text: &str) -> bool {
    text.starts_with('/') && !text.starts_with("//") && !text.contains('\\')
}

/// `%XX` sequences as the bytes they stand for (invalid UTF-8 replaced); a `%` not followed by
/// two hex digits stays as it is.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && let (Some(high), Some(low)) = (
                bytes.get(index + 1).and_then(|b| hex_value(*b)),
                bytes.get(index + 2).and_then(|b| hex_value(*b)),
            )
        {
            out.push(high * 16 + low);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_value(byte: u8) -> Option<u8> {
    char::from(byte)
        .to_digit(16)
        .and_then(|digit| u8::try_from(digit).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn paths_on_this_site_are_kept() {
        for path in [
            "/",
            "/calendar?week=2026-12-07&model=NVIDIA%20L40S",
            "/teams/3#members",
            "/reservations?page=2",
            "/a%2Fb",
            "/caf%C3%A9",
            "/?model=NVIDIA%20L40S",
            "/search?q=a%5Cb",
        ] {
            assert_eq!(local_path(path), Some(path), "{path}");
        }
    }

    #[test]
    fn other_sites_and_odd_characters_fall_back_to_home() {
        for path in [
            "",
            "calendar",
            "//evil.example",
            "//evil.example/path",
            "/\\evil.example",
            "\\\\evil.example",
            "/x\\y",
            "https://evil.example/",
            "javascript:alert(1)",
            "/%09/evil.example",
            "/%0a/evil.example",
            "/%0D%0A/evil.example",
            "/%2509/evil.example",
            "/%5Cevil.example",
            "/%2F/evil.example",
            "/%20/x",
            "/%e2%80%a8/x",
            "/?q=%0a",
            "/#%09",
            "/\t/evil.example",
            "/ /x",
            "/\n/x",
            "/café",
        ] {
            assert_eq!(local_path(path), None, "{path:?}");
            assert_eq!(local_path_or_home(Some(path)), HOME, "{path:?}");
        }
        assert_eq!(local_path_or_home(None), HOME);
    }

    #[test]
    fn a_lone_percent_is_just_a_character() {
        assert_eq!(local_path("/search?q=100%"), Some("/search?q=100%"));
        assert_eq!(local_path("/%zz"), Some("/%zz"));
    }

    proptest! {
        /// Whatever is accepted, a browser resolving it against this site stays on this site.
        #[test]
        fn accepted_paths_stay_on_this_origin(raw in "[/\\\\%0-9a-fA-F:@.?#\t \nxe-]{0,16}") {
            if let Some(path) = local_path(&raw) {
                let base = url::Url::parse("https://berth.example/here/").unwrap();
                let joined = base.join(path).unwrap();
                prop_assert_eq!(joined.host_str(), Some("berth.example"));
                prop_assert_eq!(joined.scheme(), "https");
                let decoded = percent_decode(path);
                prop_assert!(!decoded.starts_with("//"));
                prop_assert!(!decoded.chars().any(char::is_control));
            }
        }

        /// A prefix that leaves the site is refused whatever follows it.
        #[test]
        fn prefixes_that_leave_the_site_are_refused(
            prefix in prop::sample::select(vec!["//", "/\\", "/%09/", "/%2f/", "https:", "\\", "/%0A/"]),
            rest in "[a-z./]{0,12}",
        ) {
            let raw = format!("{prefix}{rest}");
            prop_assert_eq!(local_path(&raw), None);
        }
    }
}
