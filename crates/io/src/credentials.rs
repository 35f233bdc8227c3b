//! Store errors in words: a request that failed because no credentials were found says so, and
//! how to provide them, instead of quoting the failed request to the instance-metadata service.
//!
//! `object_store` looks for credentials in its configuration (the `AWS_*`, `GOOGLE_*`,
//! `AZURE_*` variables [`store_for_url`](crate::store_for_url) passes on) and, when none are
//! configured, asks the cloud's instance-metadata service last (AWS IMDS at
//! `169.254.169.254/latest/api/token`, the GCE metadata server's
//! `computeMetadata/v1/instance/service-accounts`, Azure IMDS
//! `metadata/identity/oauth2/token`). Off a cloud machine that request fails, and its failure is
//! what the store reports. These request paths are the services' documented protocol, so they
//! identify such a failure whatever endpoint was configured.

use crate::redact::redact;

/// How to provide S3 credentials, as `object_store` reads them.
const AWS_HELP: &str = "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials), or AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN; for a public bucket set AWS_SKIP_SIGNATURE=true (anonymous access). AWS_PROFILE and ~/.aws files are not read";

/// How to provide GCS credentials.
const GCS_HELP: &str = "no Google Cloud credentials found: set GOOGLE_APPLICATION_CREDENTIALS (or GOOGLE_SERVICE_ACCOUNT) to a service-account JSON file, GOOGLE_SERVICE_ACCOUNT_KEY to its contents, or run `gcloud auth application-default login`; for a public bucket set GOOGLE_SKIP_SIGNATURE=true (anonymous access)";

/// How to provide Azure credentials.
const AZURE_HELP: &str = "no Azure credentials found: set AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_KEY or AZURE_STORAGE_TOKEN, or AZURE_CLIENT_ID with AZURE_CLIENT_SECRET and AZURE_TENANT_ID, or AZURE_USE_AZURE_CLI=true; for a public container set AZURE_SKIP_SIGNATURE=true (anonymous access)";

/// How to name the Azure storage account.
const AZURE_ACCOUNT_HELP: &str = "no Azure storage account given: set AZURE_STORAGE_ACCOUNT_NAME, or write the URL as abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH";

/// The instance-metadata request paths of each cloud's last-resort credential provider.
const METADATA_PATHS: &[(&str, &str, &str)] = &[
    ("S3", "/latest/api/token", AWS_HELP),
    ("S3", "/latest/meta-data/iam/security-credentials", AWS_HELP),
    (
        "GCS",
        "computeMetadata/v1/instance/service-accounts",
        GCS_HELP,
    ),
    (
        "MicrosoftAzure",
        "metadata/identity/oauth2/token",
        AZURE_HELP,
    ),
];

/// What to tell the user when `e` says credentials (or the account) are missing: `None` for
/// every other error.
#[must_use]
pub fn credentials_help(e: &object_store::Error) -> Option<&'static str> {
    let object_store::Error::Generic { store, .. } = e else {
        return None;
    };
    let text = e.to_string();
    if *store == "MicrosoftAzure" && text.contains("Account must be specified") {
        return Some(AZURE_ACCOUNT_HELP);
    }
    METADATA_PATHS
        .iter()
        .find(|(s, path, _)| s == store && text.contains(path))
        .map(|&(_, _, help)| help)
}

/// The store's error as a message: without credentials (through [`redact`]), and for a
/// request that found no credentials, what is missing and how to provide it (followed by
/// which metadata request failed, in brackets).
///
/// ```
/// use scifmt_io::{object_store, store_error_message};
/// let e = object_store::Error::Generic {
///     store: "S3",
///     source: "Error performing PUT http://169.254.169.254/latest/api/token: 403".into(),
/// };
/// assert!(store_error_message(&e).starts_with("no AWS credentials found: set AWS_ACCESS_KEY_ID"));
/// ```
#[must_use]
pub fn store_error_message(e: &object_store::Error) -> String {
    match credentials_help(e) {
        Some(help) if help == AZURE_ACCOUNT_HELP => help.to_owned(),
        Some(help) => {
            let endpoint = metadata_endpoint(&e.to_string());
            format!("{help} (the instance-metadata service at {endpoint}, asked last, gave none)")
        }
        None => redact(&e.to_string()),
    }
}

/// `scheme://host[:port]` of the first URL in `text` (the metadata service asked), redacted.
fn metadata_endpoint(text: &str) -> String {
    let Some(i) = text.find("://") else {
        return "its default address".to_owned();
    };
    let start = text[..i]
        .rfind(|c: char| !c.is_ascii_alphanumeric())
        .map_or(0, |p| p + 1);
    let rest = &text[i + 3..];
    let end = rest
        .find(|c: char| c == '/' || c.is_whitespace())
        .unwrap_or(rest.len());
    redact(&format!("{}{}", &text[start..i + 3], &rest[..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generic(store: &'static str, text: &str) -> object_store::Error {
        object_store::Error::Generic {
            store,
            source: text.to_owned().into(),
        }
    }

    #[test]
    fn metadata_failures_say_how_to_provide_credentials() {
        let e = generic(
            "S3",
            "Error performing PUT http://169.254.169.254/latest/api/token in 3ms - 403 Forbidden",
        );
        let m = store_error_message(&e);
        assert!(
            m.starts_with(
                "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            ),
            "{m}"
        );
        assert!(m.contains("AWS_SKIP_SIGNATURE=true"), "{m}");
        assert!(
            m.ends_with(
                "(the instance-metadata service at http://169.254.169.254, asked last, gave none)"
            ),
            "{m}"
        );
        let e = generic(
            "GCS",
            "Error performing token request: Error performing GET http://127.0.0.1:1/computeMetadata/v1/instance/service-accounts/default/token",
        );
        let m = store_error_message(&e);
        assert!(
            m.starts_with("no Google Cloud credentials found: set GOOGLE_APPLICATION_CREDENTIALS"),
            "{m}"
        );
        assert!(m.contains("at http://127.0.0.1:1,"), "{m}");
        let e = generic("MicrosoftAzure", "Account must be specified");
        assert!(store_error_message(&e).contains("AZURE_STORAGE_ACCOUNT_NAME"));
        let e = generic(
            "MicrosoftAzure",
            "Error performing token request: GET http://169.254.169.254/metadata/identity/oauth2/token?api-version=1",
        );
        assert!(store_error_message(&e).starts_with("no Azure credentials found"));
    }

    #[test]
    fn other_errors_are_quoted_redacted() {
        let e = generic(
            "S3",
            "Error performing GET https://u:pw@host/b/k?sig=1 - 500",
        );
        assert_eq!(credentials_help(&e), None);
        assert_eq!(
            store_error_message(&e),
            "Generic S3 error: Error performing GET https://host/b/k - 500"
        );
        // A bucket key that happens to spell a metadata path is no credential failure.
        let nf = object_store::Error::NotFound {
            path: "latest/api/token".into(),
            source: "404".into(),
        };
        assert_eq!(credentials_help(&nf), None);
    }
}
