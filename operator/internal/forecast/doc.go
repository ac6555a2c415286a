// Package forecast learns when people come back to a workload and prices a
// cold start in awake minutes, to say when to wake it early, how long to
// hold it awake past idleAfter and when to pause it early
// (docs/forecast.md#how-it-decides). It is pure: no client and no clock of
// its own; every method takes the time it is asked at, so the operator and
// the forecast simulator (internal/tools/forecastsim) run the same code on
// real and replayed time.
//
// It does not know what counts as a person (the caller records only
// person-caused activity: requests and clicks through the doorman,
// wake-requested, last-activity, activity while awake; never robots turned
// away, schedule or forecast wakes), and it does not act: a workload in
// Observe mode reports each Decision's Observed text instead.
//
// # What it keeps
//
//   - Idle gaps: the last Gaps (128) gaps between a person's activity and
//     the next, each with its length (capped at 4 hours: later is "no
//     return"), the local minute of the week it began (in the workload's
//     zone, through internal/civil, so a 14:00 gap stays 14:00 across DST
//     weeks of 167 and 169 hours) and its age in days (dropped after 31).
//     Only gaps of at least Settings.IdleAfter are kept, or PauseEarlyIdle
//     (15 minutes) with pauseEarly.
//   - First arrivals: for each of the last 28 local days, the minute the
//     first person came after at least 4 hours without one, or nobody.
//   - The latest person, and the last ten resume times (the pre-wake's
//     lead is their p90 plus Buffer).
//
// # The decisions
//
// One price, Settings.ColdStartCost (DefaultColdStartCost, 90 minutes;
// scaled down while Settings.ExtraAwake is over Settings.MaxExtraAwake),
// decides them all (model.go):
//
//   - Hold (autoResume): idle e since the latest person, stay up to the
//     H in (e, idleAfter+4h] that maximises cost × the chance of a return before H −
//     E[extra awake minutes], over the gaps of at least e, each weighted by
//     closeness in local time of day (a triangle 3 hours each side), same weekday
//     (1) or day type (½, else a tenth) and recency (half-life 14 days).
//     Asked again at H, it may hold on. Nothing pays: pause at idleAfter.
//   - PreWake (autoResume): from the first arrivals of the same weekday
//     (1) and day type (½), the arrival and give-up minutes that pay at the
//     same price with someone coming by the give-up time in at least
//     PreWakeSure (70 %) of the alike days with nobody yet; woken Lead
//     before the arrival, held until the give-up time.
//   - PauseEarly (pauseEarly): from PauseEarlyIdle on, pause now when no H
//     pays. Never for wake mode Ask.
//   - A workload no person touched for StaleAfter (4 days) is never woken
//     or held. Less than minWeight of alike evidence acts on nothing.
//
// # Stored state
//
// Encode writes the whole state in EncodedLen (658) bytes for
// status.forecast, version 2 (encode.go has the layout); Decode reads it
// back and refuses a value of another length, version (ErrOldVersion for
// an older operator's hourly shares), zone (ErrZoneChanged), or with
// fields out of range, and never panics. EncodeStatus and DecodeStatus are
// the same in base64. OnFold tells the caller of each hour as it ends (the
// operator keeps last week's hits and misses with it); it is not stored.
package forecast
