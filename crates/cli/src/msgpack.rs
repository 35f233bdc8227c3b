//! JSON ⇄ msgpack for metalayers (`frame meta`, `frame create --meta/--vlmeta`).
//!
//! msgpack binary values are shown as `{"$bin": "<hex>"}` (and such an object given on the
//! command line is stored as binary); extension values as `{"$ext": type, "data": "<hex>"}`.

use blosc2_frame::rmpv;
use blosc2_frame::rmpv::Value as Mp;
use serde_json::{Map, Number, Value as Json};

/// msgpack value to JSON.
pub(crate) fn to_json(v: &Mp) -> Json {
    match v {
        Mp::Nil => Json::Null,
        Mp::Boolean(b) => Json::Bool(*b),
        Mp::Integer(i) => {
            if let Some(u) = i.as_u64() {
                Json::from(u)
            } else if let Some(s) = i.as_i64() {
                Json::from(s)
            } else {
                Json::Null
            }
        }
        Mp::F32(f) => Number::from_f64(f64::from(*f)).map_or(Json::Null, Json::Number),
        Mp::F64(f) => Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Mp::String(s) => match s.as_str() {
            Some(t) => Json::String(t.to_owned()),
            None => Json::String(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        },
        Mp::Binary(b) => {
            let mut m = Map::new();
            m.insert("$bin".into(), Json::String(hex::encode(b)));
            Json::Object(m)
        }
        Mp::Array(a) => Json::Array(a.iter().map(to_json).collect()),
        Mp::Map(kv) => {
            let mut m = Map::new();
            for (k, v) in kv {
                let key = match k {
                    Mp::String(s) => s
                        .as_str()
                        .map_or_else(|| to_json(k).to_string(), str::to_owned),
                    other => to_json(other).to_string(),
                };
                m.insert(key, to_json(v));
            }
            Json::Object(m)
        }
        Mp::Ext(t, data) => {
            let mut m = Map::new();
            m.insert("$ext".into(), Json::from(*t));
            m.insert("data".into(), Json::String(hex::encode(data)));
            Json::Object(m)
        }
    }
}

/// JSON value to msgpack.
pub(crate) fn from_json(v: &Json) -> Result<Mp, String> {
    Ok(match v {
        Json::Null => Mp::Nil,
        Json::Bool(b) => Mp::Boolean(*b),
        Json::Number(n) => {
            if let Some(u) = n.as_u64() {
                Mp::from(u)
            } else if let Some(i) = n.as_i64() {
                Mp::from(i)
            } else {
                Mp::F64(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(s) => Mp::from(s.as_str()),
        Json::Array(a) => Mp::Array(a.iter().map(from_json).collect::<Result<_, _>>()?),
        Json::Object(m) => {
            if let (1, Some(Json::String(h))) = (m.len(), m.get("$bin")) {
                return hex::decode(h)
                    .map(Mp::Binary)
                    .map_err(|e| format!("\"$bin\" is not hex: {e}"));
            }
            Mp::Map(
                m.iter()
                    .map(|(k, v)| Ok((Mp::from(k.as_str()), from_json(v)?)))
                    .collect::<Result<_, String>>()?,
            )
        }
    })
}

/// Parses `NAME=JSON` into the name and the msgpack bytes.
pub(crate) fn parse_layer(s: &str) -> Result<(String, Vec<u8>), String> {
    let (name, json) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not NAME=JSON"))?;
    if name.is_empty() {
        return Err(format!("`{s}` has an empty name"));
    }
    let value: Json =
        serde_json::from_str(json).map_err(|e| format!("`{json}` is not JSON: {e}"))?;
    let mp = from_json(&value)?;
    let mut bytes = Vec::new();
    rmpv::encode::write_value(&mut bytes, &mp).map_err(|e| e.to_string())?;
    Ok((name.to_owned(), bytes))
}

/// Decodes msgpack bytes to JSON, or `{"$raw": "<hex>"}` if they are not one msgpack value.
pub(crate) fn bytes_to_json(bytes: &[u8]) -> Json {
    let mut rd = bytes;
    match rmpv::decode::read_value(&mut rd) {
        Ok(v) if rd.is_empty() => to_json(&v),
        _ => {
            let mut m = Map::new();
            m.insert("$raw".into(), Json::String(hex::encode(bytes)));
            Json::Object(m)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_blosc2_metalayer_bytes() {
        // manifest.json: meta={'m1': [1,2,3], 'mymeta': {'a': 1}} -> 93010203, 81a16101
        assert_eq!(parse_layer("m1=[1,2,3]").unwrap().1, [0x93, 1, 2, 3]);
        assert_eq!(
            parse_layer("mymeta={\"a\":1}").unwrap().1,
            [0x81, 0xa1, b'a', 1]
        );
        let bin = parse_layer("b={\"$bin\":\"000102\"}").unwrap().1;
        assert_eq!(bin, [0xc4, 3, 0, 1, 2]);
        assert_eq!(bytes_to_json(&bin).to_string(), r#"{"$bin":"000102"}"#);
        assert!(parse_layer("noequals").is_err());
        assert!(parse_layer("a={").is_err());
    }
}
