//! The S3 implementation: s3s-fs behind per-key locks, with the conditional-request handling it
//! lacks.
//!
//! What s3s-fs 0.14.1 does and what this wrapper changes:
//!
//! - **Conditional PUT** (`If-Match: <etag>`, `If-None-Match: *`, also on
//!   CompleteMultipartUpload): s3s-fs checks the condition, then streams the body to a temporary
//!   file and renames it over the key. Two writers can both pass the check before either renames,
//!   so both succeed. Here every write to a key (PUT, CompleteMultipartUpload, CopyObject to it,
//!   DELETE) holds that key's write lock from the check to the end of the write, so exactly one of
//!   two writers holding the same ETag wins and the other gets 412 Precondition Failed.
//!   CopyObject with `If-None-Match: *` copies only to a key that does not exist yet.
//! - **Metadata after the data**: s3s-fs renames the object file first and writes the stored
//!   ETag (a side file) afterwards, and GET opens the file before it reads that ETag. Without a
//!   lock a GET racing a PUT could send new bytes under the old ETag (or the reverse). Reads take
//!   the key's read lock while s3s-fs opens the file and reads its metadata; the body is then read
//!   from the open file, which a later rename does not change, so a GET's bytes and ETag always
//!   belong to the same version.
//! - **Conditional GET/HEAD**: s3s-fs ignores `If-Match`, `If-None-Match`, `If-Modified-Since` and
//!   `If-Unmodified-Since`. They are evaluated here as S3 does (RFC 9110 section 13.2.2 order):
//!   `If-Match` false → 412; else `If-Unmodified-Since` false → 412; `If-None-Match` matching →
//!   304; else `If-Modified-Since` false → 304.
//! - **Checksum failures after the rename**: s3s-fs compares `Content-MD5` and `x-amz-checksum-*`
//!   values only after the object has replaced the old one, so a corrupted upload would stay under
//!   the key. When a PUT carries such a value, the body is read into memory and verified first;
//!   a mismatch answers 400 BadDigest and stores nothing. (A body cut short or failing its signed
//!   SHA-256 never reaches the key: s3s-fs deletes the temporary file.)
//!
//! - **ETags in listings**: s3s-fs lists objects without their ETags; here each listed object
//!   gets the ETag a HEAD of it gives (under its read lock), as S3 lists them.
//! - **Suffix ranges and directory keys**: a suffix range longer than the object selects all of
//!   it (RFC 9110 section 14.1.2) instead of s3s-fs's 500; a GET/HEAD of a key that is a
//!   directory in s3s-fs (a prefix of other keys, or ending in `/`) or lies below an object is
//!   404 NoSuchKey instead of 500.
//!
//! ETags are s3s-fs's: the hex MD5 of the content for a PUT, `md5(part md5s)-N` for a multipart
//! upload, as S3 computes them. Writing the same bytes again gives the same ETag, as on S3.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use async_trait::async_trait;
use bytes::Bytes;
use futures::TryStreamExt;
use s3s::dto::{self, ETag, ETagCondition, StreamingBlob, Timestamp};
use s3s::{S3, S3Request, S3Response, S3Result, s3_error};
use s3s_fs::FileSystem;
use tokio::sync::RwLock;

/// Per-object locks, created on demand and dropped when no request holds them.
#[derive(Debug, Default)]
struct KeyLocks {
    map: Mutex<HashMap<String, Weak<RwLock<()>>>>,
}

impl KeyLocks {
    fn get(&self, bucket: &str, key: &str) -> Arc<RwLock<()>> {
        let name = format!("{bucket}\n{key}");
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(lock) = map.get(&name).and_then(Weak::upgrade) {
            return lock;
        }
        if map.len() >= 1024 {
            map.retain(|_, w| w.strong_count() > 0);
        }
        let lock = Arc::new(RwLock::new(()));
        map.insert(name, Arc::downgrade(&lock));
        lock
    }
}

/// s3s-fs with per-key locking and conditional reads (see the module docs). Clones share the
/// store and the locks (the HTTP layer keeps one to replace objects for `FaultKind::Replace`).
#[derive(Debug, Clone)]
pub(crate) struct Guarded {
    fs: Arc<FileSystem>,
    locks: Arc<KeyLocks>,
    /// s3s-fs's root directory (buckets are its subdirectories).
    root: Arc<PathBuf>,
}

impl Guarded {
    pub(crate) fn new(fs: FileSystem, root: PathBuf) -> Self {
        Self {
            fs: Arc::new(fs),
            locks: Arc::default(),
            root: Arc::new(root),
        }
    }

    /// The size of the object `bucket/key`, or NoSuchKey if it is not a regular file: s3s-fs
    /// answers 500 for a key naming a directory (a prefix of other keys, or `dir/`), where S3
    /// answers 404.
    async fn object_size(&self, bucket: &str, key: &str) -> S3Result<u64> {
        let path = self.root.join(bucket).join(key);
        match tokio::fs::metadata(&path).await {
            Ok(m) if m.is_file() && !key.ends_with('/') => Ok(m.len()),
            _ => Err(s3_error!(NoSuchKey)),
        }
    }

    /// Store `data` under `bucket/key` as a PUT would (same lock, same ETag bookkeeping).
    pub(crate) async fn replace(&self, bucket: &str, key: &str, data: Bytes) -> S3Result<()> {
        let input = dto::PutObjectInput::builder()
            .bucket(bucket.to_owned())
            .key(key.to_owned())
            .body(Some(StreamingBlob::from(s3s::Body::from(data))))
            .build()
            .map_err(|e| s3_error!(InternalError, "PutObjectInput: {e:?}"))?;
        let req = S3Request {
            input,
            method: http::Method::PUT,
            uri: http::Uri::from_static("/"),
            headers: http::HeaderMap::new(),
            extensions: http::Extensions::new(),
            credentials: None,
            region: None,
            service: None,
            trailing_headers: None,
        };
        self.put_object(req).await.map(drop)
    }
}

fn etag_matches_strong(current: Option<&ETag>, cond: &ETagCondition) -> bool {
    match cond {
        ETagCondition::Any => true,
        ETagCondition::ETag(want) => current.is_some_and(|c| c.strong_cmp(want)),
    }
}

fn etag_matches_weak(current: Option<&ETag>, cond: &ETagCondition) -> bool {
    match cond {
        ETagCondition::Any => true,
        ETagCondition::ETag(want) => current.is_some_and(|c| c.weak_cmp(want)),
    }
}

fn seconds(ts: &Timestamp) -> i64 {
    time::OffsetDateTime::from(ts.clone()).unix_timestamp()
}

/// The read preconditions of a GET or HEAD.
struct ReadConditions<'a> {
    if_match: Option<&'a ETagCondition>,
    if_none_match: Option<&'a ETagCondition>,
    if_modified_since: Option<&'a Timestamp>,
    if_unmodified_since: Option<&'a Timestamp>,
}

impl ReadConditions<'_> {
    fn check(&self, etag: Option<&ETag>, last_modified: Option<&Timestamp>) -> S3Result<()> {
        // HTTP dates have one-second resolution.
        let modified = last_modified.map(seconds);
        if let Some(cond) = self.if_match {
            if !etag_matches_strong(etag, cond) {
                return Err(s3_error!(
                    PreconditionFailed,
                    "If-Match: the ETag does not match"
                ));
            }
        } else if let (Some(since), Some(modified)) = (self.if_unmodified_since, modified)
            && modified > seconds(since)
        {
            return Err(s3_error!(
                PreconditionFailed,
                "If-Unmodified-Since: modified since"
            ));
        }
        if let Some(cond) = self.if_none_match {
            if etag_matches_weak(etag, cond) {
                return Err(s3_error!(NotModified));
            }
        } else if let (Some(since), Some(modified)) = (self.if_modified_since, modified)
            && modified <= seconds(since)
        {
            return Err(s3_error!(NotModified));
        }
        Ok(())
    }
}

/// If the PUT carries `Content-MD5` or `x-amz-checksum-*` values (or announces trailing ones),
/// read the body, verify them and replace the body by the verified bytes, so that s3s-fs's own
/// checks (which run after its rename) cannot fail.
async fn verify_put_body(req: &mut S3Request<dto::PutObjectInput>) -> S3Result<()> {
    let input = &req.input;
    let has_trailer = req.trailing_headers.is_some();
    let wants_check = input.content_md5.is_some()
        || input.checksum_crc32.is_some()
        || input.checksum_crc32c.is_some()
        || input.checksum_sha1.is_some()
        || input.checksum_sha256.is_some()
        || input.checksum_crc64nvme.is_some()
        || has_trailer;
    if !wants_check {
        return Ok(());
    }
    let Some(body) = req.input.body.take() else {
        return Ok(());
    };
    let chunks: Vec<Bytes> = body
        .try_collect()
        .await
        .map_err(|e| s3_error!(IncompleteBody, "reading the request body: {e}"))?;
    let mut data = Vec::with_capacity(chunks.iter().map(Bytes::len).sum());
    for c in &chunks {
        data.extend_from_slice(c);
    }
    let data = Bytes::from(data);

    if let Some(trailers) = req.trailing_headers.take()
        && let Some(trailers) = trailers.take()
    {
        let from_trailer = |name: &str, field: &mut Option<String>| -> S3Result<()> {
            if let Some(v) = trailers.get(name) {
                let v = v
                    .to_str()
                    .map_err(|_| s3_error!(InvalidArgument, "invalid {name} trailer"))?;
                *field = Some(v.to_owned());
            }
            Ok(())
        };
        let input = &mut req.input;
        from_trailer("x-amz-checksum-crc32", &mut input.checksum_crc32)?;
        from_trailer("x-amz-checksum-crc32c", &mut input.checksum_crc32c)?;
        from_trailer("x-amz-checksum-sha1", &mut input.checksum_sha1)?;
        from_trailer("x-amz-checksum-sha256", &mut input.checksum_sha256)?;
        from_trailer("x-amz-checksum-crc64nvme", &mut input.checksum_crc64nvme)?;
    }

    let input = &req.input;
    if let Some(md5) = &input.content_md5 {
        use s3s::crypto::Checksum as _;
        let mut h = s3s::crypto::Md5::new();
        h.update(&data);
        let got = h.finalize();
        let want = base64_decode(md5)
            .ok_or_else(|| s3_error!(InvalidDigest, "Content-MD5 is not base64"))?;
        if got.as_ref() != want.as_slice() {
            return Err(s3_error!(BadDigest, "Content-MD5 mismatch"));
        }
    }
    let mut hasher = s3s::checksum::ChecksumHasher::default();
    if input.checksum_crc32.is_some() {
        hasher.crc32 = Some(Default::default());
    }
    if input.checksum_crc32c.is_some() {
        hasher.crc32c = Some(Default::default());
    }
    if input.checksum_sha1.is_some() {
        hasher.sha1 = Some(Default::default());
    }
    if input.checksum_sha256.is_some() {
        hasher.sha256 = Some(Default::default());
    }
    if input.checksum_crc64nvme.is_some() {
        hasher.crc64nvme = Some(Default::default());
    }
    hasher.update(&data);
    let got = hasher.finalize();
    let pairs = [
        (&input.checksum_crc32, &got.checksum_crc32),
        (&input.checksum_crc32c, &got.checksum_crc32c),
        (&input.checksum_sha1, &got.checksum_sha1),
        (&input.checksum_sha256, &got.checksum_sha256),
        (&input.checksum_crc64nvme, &got.checksum_crc64nvme),
    ];
    if pairs
        .iter()
        .any(|(want, got)| want.is_some() && want != got)
    {
        return Err(s3_error!(BadDigest, "checksum mismatch"));
    }
    req.input.body = Some(StreamingBlob::from(s3s::Body::from(data)));
    Ok(())
}

/// Standard base64 (with padding) decoding, for `Content-MD5`.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    }
    let s = s.trim().trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0u32;
    for &c in s {
        acc = (acc << 6) | val(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

#[async_trait]
impl S3 for Guarded {
    async fn create_bucket(
        &self,
        req: S3Request<dto::CreateBucketInput>,
    ) -> S3Result<S3Response<dto::CreateBucketOutput>> {
        self.fs.create_bucket(req).await
    }

    async fn copy_object(
        &self,
        req: S3Request<dto::CopyObjectInput>,
    ) -> S3Result<S3Response<dto::CopyObjectOutput>> {
        let lock = self.locks.get(&req.input.bucket, &req.input.key);
        let _w = lock.write().await;
        // `If-None-Match: *` on the destination (s3s-fs ignores it): copy only to a new key.
        if req
            .headers
            .get(http::header::IF_NONE_MATCH)
            .is_some_and(|v| v.as_bytes() == b"*")
            && self
                .object_size(&req.input.bucket, &req.input.key)
                .await
                .is_ok()
        {
            return Err(s3_error!(
                PreconditionFailed,
                "If-None-Match: the destination exists"
            ));
        }
        self.fs.copy_object(req).await
    }

    async fn delete_bucket(
        &self,
        req: S3Request<dto::DeleteBucketInput>,
    ) -> S3Result<S3Response<dto::DeleteBucketOutput>> {
        self.fs.delete_bucket(req).await
    }

    async fn delete_object(
        &self,
        req: S3Request<dto::DeleteObjectInput>,
    ) -> S3Result<S3Response<dto::DeleteObjectOutput>> {
        let lock = self.locks.get(&req.input.bucket, &req.input.key);
        let _w = lock.write().await;
        self.fs.delete_object(req).await
    }

    async fn delete_objects(
        &self,
        req: S3Request<dto::DeleteObjectsInput>,
    ) -> S3Result<S3Response<dto::DeleteObjectsOutput>> {
        let mut keys: Vec<&str> = req
            .input
            .delete
            .objects
            .iter()
            .map(|o| o.key.as_str())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let locks: Vec<_> = keys
            .iter()
            .map(|k| self.locks.get(&req.input.bucket, k))
            .collect();
        let mut guards = Vec::with_capacity(locks.len());
        for l in &locks {
            guards.push(l.write().await);
        }
        self.fs.delete_objects(req).await
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<dto::GetBucketLocationInput>,
    ) -> S3Result<S3Response<dto::GetBucketLocationOutput>> {
        self.fs.get_bucket_location(req).await
    }

    async fn get_object(
        &self,
        mut req: S3Request<dto::GetObjectInput>,
    ) -> S3Result<S3Response<dto::GetObjectOutput>> {
        let lock = self.locks.get(&req.input.bucket, &req.input.key);
        let _r = lock.read().await;
        let size = self.object_size(&req.input.bucket, &req.input.key).await?;
        // A suffix longer than the object selects all of it (RFC 9110 section 14.1.2; S3 answers
        // 206 with the whole object); s3s-fs would seek before the start and answer 500.
        if let Some(dto::Range::Suffix { length }) = req.input.range
            && length >= size
        {
            req.input.range = (size > 0).then_some(dto::Range::Int {
                first: 0,
                last: None,
            });
        }
        let input = &req.input;
        let cond = ReadConditions {
            if_match: input.if_match.as_ref(),
            if_none_match: input.if_none_match.as_ref(),
            if_modified_since: input.if_modified_since.as_ref(),
            if_unmodified_since: input.if_unmodified_since.as_ref(),
        };
        let has_cond = cond.if_match.is_some()
            || cond.if_none_match.is_some()
            || cond.if_modified_since.is_some()
            || cond.if_unmodified_since.is_some();
        if !has_cond {
            return self.fs.get_object(req).await;
        }
        // Evaluate the conditions before a Range is checked (a 412 wins over a 416), on the
        // version GET will send: both happen under the read lock.
        let head = S3Request {
            input: dto::HeadObjectInput::builder()
                .bucket(input.bucket.clone())
                .key(input.key.clone())
                .build()
                .map_err(|e| s3_error!(InternalError, "HeadObjectInput: {e:?}"))?,
            method: req.method.clone(),
            uri: req.uri.clone(),
            headers: req.headers.clone(),
            extensions: http::Extensions::new(),
            credentials: req.credentials.clone(),
            region: req.region.clone(),
            service: req.service.clone(),
            trailing_headers: None,
        };
        let meta = self.fs.head_object(head).await?;
        cond.check(
            meta.output.e_tag.as_ref(),
            meta.output.last_modified.as_ref(),
        )?;
        self.fs.get_object(req).await
    }

    async fn head_bucket(
        &self,
        req: S3Request<dto::HeadBucketInput>,
    ) -> S3Result<S3Response<dto::HeadBucketOutput>> {
        self.fs.head_bucket(req).await
    }

    async fn head_object(
        &self,
        req: S3Request<dto::HeadObjectInput>,
    ) -> S3Result<S3Response<dto::HeadObjectOutput>> {
        let lock = self.locks.get(&req.input.bucket, &req.input.key);
        let _r = lock.read().await;
        self.object_size(&req.input.bucket, &req.input.key).await?;
        let input = &req.input;
        let if_match = input.if_match.clone();
        let if_none_match = input.if_none_match.clone();
        let if_modified_since = input.if_modified_since.clone();
        let if_unmodified_since = input.if_unmodified_since.clone();
        let resp = self.fs.head_object(req).await?;
        ReadConditions {
            if_match: if_match.as_ref(),
            if_none_match: if_none_match.as_ref(),
            if_modified_since: if_modified_since.as_ref(),
            if_unmodified_since: if_unmodified_since.as_ref(),
        }
        .check(
            resp.output.e_tag.as_ref(),
            resp.output.last_modified.as_ref(),
        )?;
        Ok(resp)
    }

    async fn list_buckets(
        &self,
        req: S3Request<dto::ListBucketsInput>,
    ) -> S3Result<S3Response<dto::ListBucketsOutput>> {
        self.fs.list_buckets(req).await
    }

    async fn list_objects(
        &self,
        req: S3Request<dto::ListObjectsInput>,
    ) -> S3Result<S3Response<dto::ListObjectsOutput>> {
        self.fs.list_objects(req).await
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<dto::ListObjectsV2Input>,
    ) -> S3Result<S3Response<dto::ListObjectsV2Output>> {
        let bucket = req.input.bucket.clone();
        let (uri, headers, credentials, region, service) = (
            req.uri.clone(),
            req.headers.clone(),
            req.credentials.clone(),
            req.region.clone(),
            req.service.clone(),
        );
        let head_of = |key: &str| -> S3Result<S3Request<dto::HeadObjectInput>> {
            Ok(S3Request {
                input: dto::HeadObjectInput::builder()
                    .bucket(bucket.clone())
                    .key(key.to_owned())
                    .build()
                    .map_err(|e| s3_error!(InternalError, "HeadObjectInput: {e:?}"))?,
                method: http::Method::HEAD,
                uri: uri.clone(),
                headers: headers.clone(),
                extensions: http::Extensions::new(),
                credentials: credentials.clone(),
                region: region.clone(),
                service: service.clone(),
                trailing_headers: None,
            })
        };
        let mut resp = self.fs.list_objects_v2(req).await?;
        // Every listed object with its ETag, as S3 lists them (s3s-fs leaves it out).
        for object in resp.output.contents.iter_mut().flatten() {
            let Some(key) = object.key.clone() else {
                continue;
            };
            if object.e_tag.is_some() {
                continue;
            }
            let lock = self.locks.get(&bucket, &key);
            let _r = lock.read().await;
            if let Ok(head) = self.fs.head_object(head_of(&key)?).await {
                object.e_tag = head.output.e_tag;
            }
        }
        Ok(resp)
    }

    async fn put_object(
        &self,
        mut req: S3Request<dto::PutObjectInput>,
    ) -> S3Result<S3Response<dto::PutObjectOutput>> {
        verify_put_body(&mut req).await?;
        let lock = self.locks.get(&req.input.bucket, &req.input.key);
        let _w = lock.write().await;
        self.fs.put_object(req).await
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<dto::CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<dto::CreateMultipartUploadOutput>> {
        self.fs.create_multipart_upload(req).await
    }

    async fn upload_part(
        &self,
        req: S3Request<dto::UploadPartInput>,
    ) -> S3Result<S3Response<dto::UploadPartOutput>> {
        self.fs.upload_part(req).await
    }

    async fn upload_part_copy(
        &self,
        req: S3Request<dto::UploadPartCopyInput>,
    ) -> S3Result<S3Response<dto::UploadPartCopyOutput>> {
        self.fs.upload_part_copy(req).await
    }

    async fn list_parts(
        &self,
        req: S3Request<dto::ListPartsInput>,
    ) -> S3Result<S3Response<dto::ListPartsOutput>> {
        self.fs.list_parts(req).await
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<dto::CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<dto::CompleteMultipartUploadOutput>> {
        let lock = self.locks.get(&req.input.bucket, &req.input.key);
        let _w = lock.write().await;
        self.fs.complete_multipart_upload(req).await
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<dto::AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<dto::AbortMultipartUploadOutput>> {
        self.fs.abort_multipart_upload(req).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn put_req(
        body: &'static [u8],
        md5: Option<&str>,
        sha256: Option<&str>,
    ) -> S3Request<dto::PutObjectInput> {
        let input = dto::PutObjectInput::builder()
            .bucket("b".to_owned())
            .key("k".to_owned())
            .body(Some(StreamingBlob::from(s3s::Body::from(
                Bytes::from_static(body),
            ))))
            .content_md5(md5.map(str::to_owned))
            .checksum_sha256(sha256.map(str::to_owned))
            .build()
            .unwrap();
        S3Request {
            input,
            method: http::Method::PUT,
            uri: http::Uri::from_static("/b/k"),
            headers: http::HeaderMap::new(),
            extensions: http::Extensions::new(),
            credentials: None,
            region: None,
            service: None,
            trailing_headers: None,
        }
    }

    // MD5("hello") and SHA-256("hello"), base64.
    const MD5_HELLO: &str = "XUFAKrxLKna5cZ2REBfFkg==";
    const SHA256_HELLO: &str = "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=";

    #[tokio::test]
    async fn corrupted_uploads_store_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("b")).unwrap();
        let guarded = Guarded::new(
            FileSystem::new(dir.path()).unwrap(),
            dir.path().canonicalize().unwrap(),
        );
        let object = dir.path().join("b/k");

        // s3s-fs alone keeps an upload whose Content-MD5 does not match (checked after rename):
        // the reason for `verify_put_body`.
        let err = guarded
            .fs
            .put_object(put_req(b"hello", Some("AAAAAAAAAAAAAAAAAAAAAA=="), None))
            .await
            .unwrap_err();
        assert_eq!(*err.code(), s3s::S3ErrorCode::BadDigest);
        assert!(object.exists());
        std::fs::remove_file(&object).unwrap();

        for (md5, sha) in [
            (Some("AAAAAAAAAAAAAAAAAAAAAA=="), None),
            (None, Some("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")),
            (
                Some(MD5_HELLO),
                Some("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="),
            ),
        ] {
            let err = guarded
                .put_object(put_req(b"hello", md5, sha))
                .await
                .unwrap_err();
            assert_eq!(*err.code(), s3s::S3ErrorCode::BadDigest, "{md5:?} {sha:?}");
            assert!(!object.exists(), "{md5:?} {sha:?}");
        }
        let ok = guarded
            .put_object(put_req(b"hello", Some(MD5_HELLO), Some(SHA256_HELLO)))
            .await
            .unwrap();
        assert_eq!(
            ok.output.e_tag,
            Some(ETag::Strong("5d41402abc4b2a76b9719d911017c592".to_owned()))
        );
        assert_eq!(std::fs::read(&object).unwrap(), b"hello");
    }

    #[test]
    fn base64_decodes_md5_values() {
        assert_eq!(
            base64_decode(MD5_HELLO).unwrap(),
            [
                0x5d, 0x41, 0x40, 0x2a, 0xbc, 0x4b, 0x2a, 0x76, 0xb9, 0x71, 0x9d, 0x91, 0x10, 0x17,
                0xc5, 0x92
            ]
        );
        assert!(base64_decode("not base64!").is_none());
    }
}
