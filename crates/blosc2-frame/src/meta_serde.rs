//! Metalayers and vlmetalayers as `serde` values (feature `serde`): encoded with
//! `rmp-serde` the way python-blosc2 encodes Python objects with `msgpack` — structs and maps
//! as msgpack maps keyed by field name, integers in their smallest form, byte buffers
//! (`serde_bytes`) as `bin` — and decoded into any `Deserialize` type.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};
use crate::reader::Frame;
use crate::stream::FrameFileWriter;
use crate::writer::FrameWriter;

/// Most nesting levels accepted when decoding a (possibly hostile) layer.
const MAX_DEPTH: usize = 256;

/// `value` as msgpack, structs as maps.
fn encode<T: Serialize + ?Sized>(kind: &'static str, name: &str, value: &T) -> Result<Vec<u8>> {
    rmp_serde::to_vec_named(value).map_err(|e| Error::Serde {
        kind,
        name: name.to_string(),
        detail: e.to_string(),
    })
}

/// Decodes the whole of `raw` as a `T`.
fn decode<T: DeserializeOwned>(kind: &'static str, name: &str, raw: &[u8]) -> Result<T> {
    let err = |detail: String| Error::Serde {
        kind,
        name: name.to_string(),
        detail,
    };
    let mut rest = raw;
    let mut de = rmp_serde::Deserializer::new(&mut rest);
    de.set_max_depth(MAX_DEPTH);
    let value = T::deserialize(&mut de).map_err(|e| err(e.to_string()))?;
    if !rest.is_empty() {
        return Err(err(format!("{} trailing bytes", rest.len())));
    }
    Ok(value)
}

impl FrameWriter {
    /// [`FrameWriter::add_metalayer`] with `value` encoded as msgpack (structs as maps).
    ///
    /// # Errors
    /// [`Error::Serde`] if `value` cannot be encoded, or as [`FrameWriter::add_metalayer`].
    #[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
    pub fn add_metalayer_serde<T: Serialize + ?Sized>(
        &mut self,
        name: &str,
        value: &T,
    ) -> Result<()> {
        self.add_metalayer(name, &encode("metalayer", name, value)?)
    }

    /// [`FrameWriter::update_metalayer`] with `value` encoded as msgpack.
    ///
    /// # Errors
    /// [`Error::Serde`] if `value` cannot be encoded, or as [`FrameWriter::update_metalayer`].
    #[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
    pub fn update_metalayer_serde<T: Serialize + ?Sized>(
        &mut self,
        name: &str,
        value: &T,
    ) -> Result<()> {
        self.update_metalayer(name, &encode("metalayer", name, value)?)
    }

    /// [`FrameWriter::set_vlmetalayer`] with `value` encoded as msgpack (what python-blosc2's
    /// `schunk.vlmeta[name] = value` stores).
    ///
    /// # Errors
    /// [`Error::Serde`] if `value` cannot be encoded, or as [`FrameWriter::set_vlmetalayer`].
    #[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
    pub fn set_vlmetalayer_serde<T: Serialize + ?Sized>(
        &mut self,
        name: &str,
        value: &T,
    ) -> Result<()> {
        self.set_vlmetalayer(name, &encode("vlmetalayer", name, value)?)
    }
}

impl FrameFileWriter {
    /// [`FrameFileWriter::set_vlmetalayer`] with `value` encoded as msgpack.
    ///
    /// # Errors
    /// As [`FrameWriter::set_vlmetalayer_serde`].
    #[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
    pub fn set_vlmetalayer_serde<T: Serialize + ?Sized>(
        &mut self,
        name: &str,
        value: &T,
    ) -> Result<()> {
        self.set_vlmetalayer(name, &encode("vlmetalayer", name, value)?)
    }
}

impl Frame<'_> {
    /// The metalayer `name` decoded from msgpack into a `T`.
    ///
    /// # Errors
    /// [`Error::NotFound`], or [`Error::Serde`] if the content is not msgpack of a `T`.
    #[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
    pub fn metalayer_as<T: DeserializeOwned>(&self, name: &str) -> Result<T> {
        let raw = self.metalayer(name).ok_or_else(|| Error::NotFound {
            kind: "metalayer",
            name: name.to_string(),
        })?;
        decode("metalayer", name, raw)
    }

    /// The vlmetalayer `name`, decompressed and decoded from msgpack into a `T`.
    ///
    /// # Errors
    /// As [`Frame::vlmetalayer`], or [`Error::Serde`] if the content is not msgpack of a `T`.
    #[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
    pub fn vlmetalayer_as<T: DeserializeOwned>(&self, name: &str) -> Result<T> {
        decode("vlmetalayer", name, &self.vlmetalayer(name)?)
    }
}
