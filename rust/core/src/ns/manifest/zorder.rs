//! Z-order: the rows of a batch ordered along a Z-curve (Morton order) of two to four columns,
//! so that a file's zone maps and a partition's file statistics bound every one of those
//! columns, where a lexicographic order bounds only its first column well.
//!
//! Each column's values are replaced by their rank among the batch's rows (equal values share
//! the rank of the first of them, NULLs rank last), scaled to 32 bits, so that columns of any
//! orderable type and any spread weigh the same. The Z-value interleaves those bits, the first
//! column's bit highest. A batch is in Z-order when its Z-values, computed over its own rows,
//! never decrease: ranks depend only on the values, so a file written in this order is found
//! in it again.

use std::cmp::Ordering;

use crate::arrow::array::{ArrayRef, UInt32Array};
use crate::arrow::compute::{sort_to_indices, SortOptions};
use crate::arrow::row::{RowConverter, SortField};
use crate::error::{Error, Result};

/// The most columns a Z-order interleaves (4 × 32 bits fill a `u128`).
pub const MAX_COLUMNS: usize = 4;

/// The fewest columns a Z-order takes (one column is a plain order).
pub const MIN_COLUMNS: usize = 2;

/// The Z-value of each row of `columns` (equal lengths, one to [`MAX_COLUMNS`] of them).
///
/// # Errors
/// `Arrow` for a column that does not sort; `InvalidArgument` for too many columns.
pub fn z_values(columns: &[ArrayRef]) -> Result<Vec<u128>> {
    if columns.len() > MAX_COLUMNS {
        return Err(Error::InvalidArgument(format!(
            "a Z-order takes at most {MAX_COLUMNS} columns, not {}",
            columns.len()
        )));
    }
    let n = columns.first().map_or(0, |c| c.len());
    let ranks = columns
        .iter()
        .map(scaled_ranks)
        .collect::<Result<Vec<_>>>()?;
    let mut coords = [0u32; MAX_COLUMNS];
    Ok((0..n)
        .map(|row| {
            for (c, r) in coords.iter_mut().zip(&ranks) {
                *c = r[row];
            }
            interleave(&coords[..ranks.len()])
        })
        .collect())
}

/// The row order that puts `columns` in Z-order (ties keep their order).
///
/// # Errors
/// As [`z_values`].
pub fn z_order_indices(columns: &[ArrayRef]) -> Result<UInt32Array> {
    let z = z_values(columns)?;
    let n = u32::try_from(z.len())
        .map_err(|_| Error::InvalidArgument("a Z-order sorts at most 2^32 rows".into()))?;
    let mut order: Vec<u32> = (0..n).collect();
    order.sort_by_key(|&i| z[i as usize]);
    Ok(UInt32Array::from(order))
}

/// Whether the rows of `columns` are in Z-order (their Z-values never decrease).
///
/// # Errors
/// As [`z_values`].
pub fn is_z_ordered(columns: &[ArrayRef]) -> Result<bool> {
    let z = z_values(columns)?;
    Ok(z.windows(2).all(|w| w[0].cmp(&w[1]) != Ordering::Greater))
}

/// Each row's rank in `values` (ascending, NULLs last; equal values share the first rank),
/// scaled from `0..n` to `0..2^32`.
fn scaled_ranks(values: &ArrayRef) -> Result<Vec<u32>> {
    let n = values.len();
    let options = SortOptions {
        descending: false,
        nulls_first: false,
    };
    let sorted = sort_to_indices(values, Some(options), None)?;
    let converter = RowConverter::new(vec![SortField::new_with_options(
        values.data_type().clone(),
        options,
    )])?;
    let rows = converter.convert_columns(std::slice::from_ref(values))?;
    let mut ranks = vec![0u32; n];
    let mut group_rank = 0u32;
    for (pos, idx) in sorted.values().iter().enumerate() {
        let idx = *idx as usize;
        if pos > 0 && rows.row(sorted.value(pos - 1) as usize) != rows.row(idx) {
            group_rank = scale(pos, n);
        }
        ranks[idx] = group_rank;
    }
    Ok(ranks)
}

/// `pos` of `0..n` on `0..2^32`.
fn scale(pos: usize, n: usize) -> u32 {
    // pos < n, so the quotient is below 2^32.
    ((pos as u128) << 32)
        .checked_div(n as u128)
        .map_or(0, |q| q as u32)
}

/// The bits of `coords` (`k` of them) interleaved, most significant first: bit `b` of
/// coordinate `j` lands at `b * k + (k - 1 - j)`.
fn interleave(coords: &[u32]) -> u128 {
    let mut z = 0u128;
    for b in (0..32).rev() {
        for c in coords {
            z = (z << 1) | u128::from((c >> b) & 1);
        }
    }
    z
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::arrow::array::{Int64Array, StringArray};

    #[test]
    fn ranks_share_ties_and_put_nulls_last() {
        let values: ArrayRef = Arc::new(Int64Array::from(vec![Some(30), None, Some(10), Some(30)]));
        // Sorted: 10 (pos 0), 30, 30 (pos 1), NULL (pos 3); scaled by 2^32 / 4.
        let q = 1u32 << 30;
        assert_eq!(scaled_ranks(&values).unwrap(), [q, 3 * q, 0, q]);
    }

    #[test]
    fn interleaves_the_first_column_highest() {
        // Two columns: x = 0b10.., y = 0b01..: z starts 1, 0, 0, 1.
        let z = interleave(&[1 << 31, 1 << 30]);
        assert_eq!(z >> 60, 0b1001);
        assert_eq!(interleave(&[u32::MAX, 0]) >> 62, 0b10);
        assert_eq!(interleave(&[0, u32::MAX]) >> 62, 0b01);
    }

    #[test]
    fn orders_a_grid_along_the_z_curve() {
        // A 4 x 4 grid in row-major order: the Z-curve visits its 2 x 2 quadrants one after
        // the other, (0,0) (0,1) (1,0) (1,1) in each, the first column highest.
        let x: Vec<i64> = (0..16).map(|i| i / 4).collect();
        let y: Vec<String> = (0..16).map(|i| format!("{}", i % 4)).collect();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(x.clone())),
            Arc::new(StringArray::from(y.clone())),
        ];
        let order = z_order_indices(&cols).unwrap();
        let visited: Vec<(i64, String)> = order
            .values()
            .iter()
            .map(|&i| (x[i as usize], y[i as usize].clone()))
            .collect();
        let want: Vec<(i64, String)> = [
            (0, 0),
            (0, 1),
            (1, 0),
            (1, 1),
            (0, 2),
            (0, 3),
            (1, 2),
            (1, 3),
            (2, 0),
            (2, 1),
            (3, 0),
            (3, 1),
            (2, 2),
            (2, 3),
            (3, 2),
            (3, 3),
        ]
        .iter()
        .map(|&(a, b)| (a, b.to_string()))
        .collect();
        assert_eq!(visited, want);
        assert!(!is_z_ordered(&cols).unwrap());
        let taken: Vec<ArrayRef> = cols
            .iter()
            .map(|c| crate::arrow::compute::take(c, &order, None).unwrap())
            .collect();
        assert!(is_z_ordered(&taken).unwrap());
    }

    #[test]
    fn refuses_more_than_four_columns() {
        let c: ArrayRef = Arc::new(Int64Array::from(vec![1, 2]));
        let five = vec![Arc::clone(&c); 5];
        assert!(matches!(
            z_values(&five),
            Err(Error::InvalidArgument(m)) if m.contains("at most 4")
        ));
    }
}
