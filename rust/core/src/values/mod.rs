//! Partition values as text: the string form (`to_string`, `from_string`), the Hive
//! directory name (`hive_escape`, `hive_segment`, ...) and the URI encoding of a relative
//! path (`uri_escape`), as docs/partition-values.md defines them. One implementation for
//! every place a value becomes text: namespace properties, lineage facets, Hive import and
//! export, `explain`, error messages.
//!
//! - `text`: one value's string form and its inverse; the exact text used for identities.
//! - `hive`: directory names and URI encoding.
//! - `vector`: the string form of a whole array (`to_strings`).
//! - `civil`: calendar arithmetic shared by the three.

pub(crate) mod civil;
mod hive;
mod text;
mod vector;

pub use hive::{
    directory_text, from_directory_text, hive_escape, hive_segment, hive_unescape,
    parse_hive_segment, parse_timezone, uri_escape, HIVE_DEFAULT_PARTITION,
};
pub use text::{from_exact_text, from_string, to_exact_text, to_string};
pub use vector::to_strings;
