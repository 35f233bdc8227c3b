//! Credential redaction: the one function every scifmt crate uses before a URL, or a message
//! quoting URLs, goes into an error message.

/// `text` with the credentials of every `scheme://` URL in it removed: the user info
/// (`user:password@`, the password may itself contain `@`), the query string (`?…`, which holds
/// the signature of a presigned URL) and the fragment (`#…`). Everything else is kept as it
/// was, so `text` may be a URL given by a user or a message that quotes URLs.
///
/// A URL ends at whitespace, a quote, `>` or `)`. Its authority ends at the first `/`, `?` or
/// `#` after `://`, so a password containing one of those (which a URL must percent-encode)
/// cannot be recognised.
///
/// ```
/// use scifmt_io::redact;
/// assert_eq!(redact("s3://key:se@cret@bucket/a.wkw?X-Amz-Signature=abc"), "s3://bucket/a.wkw");
/// assert_eq!(
///     redact("GET http://u:pw@host:9/x failed; see https://host/doc#top"),
///     "GET http://host:9/x failed; see https://host/doc"
/// );
/// ```
#[must_use]
pub fn redact(text: &str) -> String {
    let is_end = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '>' | ')' | '`');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let url_end = tail.find(is_end).unwrap_or(tail.len());
        let url = &tail[..url_end];
        let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
        let host_start = url[..authority_end].rfind('@').map_or(0, |at| at + 1);
        let body = &url[host_start..];
        let kept_end = body.find(['?', '#']).unwrap_or(body.len());
        if let Some(nested) = body[..kept_end].find("://") {
            // A URL quoted inside this one's path: the next round redacts it from its scheme on.
            let scheme_start = body[..nested]
                .char_indices()
                .rev()
                .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
                .map_or(0, |(i, c)| i + c.len_utf8());
            out.push_str(&body[..scheme_start]);
            rest = &tail[host_start + scheme_start..];
            continue;
        }
        out.push_str(&body[..kept_end]);
        rest = &tail[url_end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn user_info_is_removed() {
        assert_eq!(
            redact("GET http://user:pw@h:9/x/a.wkw failed; see https://h/doc"),
            "GET http://h:9/x/a.wkw failed; see https://h/doc"
        );
        assert_eq!(redact("s3://b/k@v and x://u@h"), "s3://b/k@v and x://h");
        assert_eq!(redact("no url"), "no url");
        assert_eq!(redact("tail http://a:b@"), "tail http://");
        assert_eq!(redact("s3://AKIA:secret@bucket"), "s3://bucket");
    }

    #[test]
    fn passwords_with_at_signs_are_removed_whole() {
        assert_eq!(redact("s3://k:p@ss@w@rd@bucket/key"), "s3://bucket/key");
        assert_eq!(redact("http://u:@@@h/p"), "http://h/p");
    }

    #[test]
    fn query_signatures_and_fragments_are_removed() {
        assert_eq!(
            redact("https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA&X-Amz-Signature=f00"),
            "https://b.s3.amazonaws.com/k"
        );
        assert_eq!(
            redact("error: \"https://h/k?sig=1\" (https://h/j#frag) done"),
            "error: \"https://h/k\" (https://h/j) done"
        );
        assert_eq!(redact("az://c/p?sv=2020&sig=abc#x"), "az://c/p");
        // A '?' outside a URL is text.
        assert_eq!(redact("what? s3://b/k?x=1 why?"), "what? s3://b/k why?");
    }

    #[test]
    fn urls_quoted_inside_urls_are_redacted_too() {
        assert_eq!(
            redact("http://proxy/get/s3://k:s@b/o"),
            "http://proxy/get/s3://b/o"
        );
    }
}
