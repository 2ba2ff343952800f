//! What to join and how: the kinds of join and a join's request (keys, columns, filters).

use crate::datafusion::common::JoinType;
use crate::error::{Error, Result};

/// The kinds of join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinHow {
    /// Matching pairs.
    Inner,
    /// Every left row, matched or not.
    Left,
    /// Every right row, matched or not.
    Right,
    /// Every row of both sides.
    Full,
    /// Left rows with a match (once each).
    Semi,
    /// Left rows without a match.
    Anti,
}

impl JoinHow {
    /// Parses `inner`, `left`, `right`, `full`, `semi`, `anti` (and pyarrow's names: `left
    /// outer`, `right outer`, `full outer`, `left semi`, `left anti`).
    ///
    /// # Errors
    /// `InvalidArgument` for anything else.
    pub fn parse(how: &str) -> Result<Self> {
        Ok(match how.trim().to_ascii_lowercase().as_str() {
            "inner" => Self::Inner,
            "left" | "left outer" => Self::Left,
            "right" | "right outer" => Self::Right,
            "full" | "full outer" | "outer" => Self::Full,
            "semi" | "left semi" => Self::Semi,
            "anti" | "left anti" => Self::Anti,
            other => {
                return Err(Error::InvalidArgument(format!(
                    "how: {other:?} is not a join kind (inner, left, right, full, semi, anti)"
                )))
            }
        })
    }

    pub(super) fn join_type(self) -> JoinType {
        match self {
            Self::Inner => JoinType::Inner,
            Self::Left => JoinType::Left,
            Self::Right => JoinType::Right,
            Self::Full => JoinType::Full,
            Self::Semi => JoinType::LeftSemi,
            Self::Anti => JoinType::LeftAnti,
        }
    }

    /// Whether a group with the left (`left_rows`) or right side empty can produce rows.
    pub(super) fn produces(self, has_left: bool, has_right: bool) -> bool {
        match self {
            Self::Inner | Self::Semi => has_left && has_right,
            Self::Left | Self::Anti => has_left,
            Self::Right => has_right,
            Self::Full => has_left || has_right,
        }
    }
}

/// What to join and how.
#[derive(Debug, Clone)]
pub struct JoinRequest {
    /// Equal key pairs (left column, right column).
    pub on: Vec<(String, String)>,
    /// The kind of join.
    pub how: JoinHow,
    /// Output columns by output name (all when `None`).
    pub columns: Option<Vec<String>>,
    /// Filter (SQL) applied before the join to the rows of each side whose columns it names
    /// (both sides when both have them; an error when neither has).
    pub filter: Option<String>,
    /// Filter (SQL) on the left rows, applied before the join (prunes left partitions).
    pub left_filter: Option<String>,
    /// Filter (SQL) on the right rows, applied before the join.
    pub right_filter: Option<String>,
    /// Appended to right column names that clash with a left output column.
    pub right_suffix: String,
    /// Rows per output batch (DataFusion's default when `None`).
    pub batch_size: Option<usize>,
    /// Join as one group when the partitions do not align (a plain hash join of everything
    /// the filters keep) instead of refusing.
    pub allow_shuffle: bool,
}

impl Default for JoinRequest {
    fn default() -> Self {
        Self {
            on: Vec::new(),
            how: JoinHow::Inner,
            columns: None,
            filter: None,
            left_filter: None,
            right_filter: None,
            right_suffix: "_right".into(),
            batch_size: None,
            allow_shuffle: false,
        }
    }
}
