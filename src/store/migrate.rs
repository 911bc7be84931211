//! Bringing a store made by an earlier version up to date.
//!
//! Before timers were durable, `apply` never moved a stored actor's clock:
//! every snapshot's clock stayed at 0, where the process started, and its
//! timers were due a few seconds after 0. A stored actor's clock is now
//! milliseconds since the Unix epoch, so such a snapshot read as it is would
//! have timers overdue by decades, and a periodic timer would try to catch up
//! on all its missed firings. When a store gains the `next_timer_at` column,
//! each old snapshot with timers is therefore rebased: its clock and its
//! timers move forward together so that the clock reads the time of the
//! process's last applied event (the latest moment a timer can have been
//! scheduled, so a rebased timer never fires early), or the time of the
//! upgrade when no applied event is left.

use super::StoreError;

/// The snapshot JSON with its clock moved forward to `base` and every timer
/// by as much, and its earliest timer's new due time; `None` when the
/// snapshot has no timers, which needs no rewrite.
pub(crate) fn rebase_legacy_snapshot(
    snapshot: &str,
    base: u64,
) -> Result<Option<(String, u64)>, StoreError> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("snapshot: {what}"));
    let mut value: serde_json::Value =
        serde_json::from_str(snapshot).map_err(|e| corrupt(&e.to_string()))?;
    let Some(object) = value.as_object_mut() else {
        return Err(corrupt("not an object"));
    };
    let clock = object
        .get("now")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    let shift = base.saturating_sub(clock);
    let Some(timers) = object.get_mut("timers").and_then(|t| t.as_array_mut()) else {
        return Ok(None);
    };
    if timers.is_empty() {
        return Ok(None);
    }
    let mut earliest = u64::MAX;
    for timer in timers {
        let due = timer
            .get_mut("due")
            .ok_or_else(|| corrupt("a timer without `due`"))?;
        let moved = due
            .as_u64()
            .ok_or_else(|| corrupt("a timer's `due` is not a number"))?
            .saturating_add(shift);
        *due = moved.into();
        earliest = earliest.min(moved);
    }
    object.insert("now".into(), clock.saturating_add(shift).into());
    Ok(Some((value.to_string(), earliest)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_and_timers_move_together() {
        let old = r#"{"format":1,"now":0,"timers":[{"kind":"after","state":"a","after":0,"due":5000,"seq":0},{"kind":"send","event":"X","due":2000,"seq":1}]}"#;
        let (new, earliest) = rebase_legacy_snapshot(old, 1_000_000).unwrap().unwrap();
        let value: serde_json::Value = serde_json::from_str(&new).unwrap();
        assert_eq!(value["now"], 1_000_000);
        assert_eq!(value["timers"][0]["due"], 1_005_000);
        assert_eq!(value["timers"][1]["due"], 1_002_000);
        assert_eq!(value["timers"][0]["state"], "a");
        assert_eq!(earliest, 1_002_000);
    }

    #[test]
    fn a_snapshot_without_timers_is_left_alone() {
        assert_eq!(rebase_legacy_snapshot(r#"{"now":0}"#, 9).unwrap(), None);
        assert_eq!(
            rebase_legacy_snapshot(r#"{"now":0,"timers":[]}"#, 9).unwrap(),
            None
        );
    }

    #[test]
    fn a_broken_snapshot_is_an_error() {
        assert!(rebase_legacy_snapshot("[1]", 9).is_err());
        assert!(rebase_legacy_snapshot(r#"{"timers":[{"due":"x"}]}"#, 9).is_err());
    }
}
