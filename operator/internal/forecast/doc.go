// Package forecast learns when people use a workload and says when to wake
// it early, when to hold it awake and when to pause it early
// (docs/design/schedules-forecast.md#the-forecast). It is pure: no client
// and no clock of its own; every method
// takes the time it is asked at, so the operator and the forecast simulator
// (internal/tools/forecastsim) run the same code on real and replayed time.
//
// It owns the learned week and the decisions drawn from it. It does not know
// what counts as a person (the caller records only person-caused activity:
// requests and clicks through the doorman, wake-requested, last-activity,
// activity while awake; never robots turned away, the Prometheus activity
// query, schedule or forecast wakes), and it does not act: a workload in
// Observe mode reports each Decision's Observed text instead.
//
// # The week
//
// 168 hourly slots of the local week in the workload's zone, Monday 00:00
// first (internal/civil). Each slot holds the decayed share of recent weeks
// in which a person caused activity in it: when an hour ends, its slot
// becomes
//
//	share' = (d·share·D + hit) / (1 + d·D),  d = 2^(-1/2) (half-life 2 weeks)
//
// where hit is 1 if a person was active in that hour and D is the decayed
// count of the slot's earlier weeks (D = 1 + d + … + d^(n-1) after n), so the
// share is a weighted mean of the weeks seen, the latest weighing most. Weeks
// are counted per slot, by the hours that have ended since the forecast began:
// a workload created on a Wednesday has one more week of Wednesday than of
// Monday. A week whose clocks go forward skips a local hour: its slot ends
// with no person in it. A week whose clocks go back repeats one: both real
// hours fill the same slot. So 167- and 169-hour weeks map onto the same 168
// slots.
//
// Nothing acts before one full week of history (168 hours have ended).
//
// # The decisions
//
//   - PreWake (autoResume), for a paused workload: the next slot's share is at
//     least BusyShare, a person was active within StaleAfter (4 days), and the
//     next slot starts within Lead (the workload's own p90 resume time plus
//     Buffer). An environment untouched for 4 days is never woken.
//   - Hold (autoResume), for an awake workload: the current slot's share is
//     at least BusyShare and a person was active within HoldWithin (2 hours):
//     it is not paused for idleness.
//   - PauseEarly (pauseEarly): idle for PauseEarlyIdle (15 minutes) while this
//     slot and the next have shares below QuietShare. Never for wake mode Ask.
//
// # Stored state
//
// Encode writes the whole state in EncodedLen (216) bytes for status.forecast
// and Decode reads it back; Decode refuses a value of another length, another
// version or another zone, or with fields out of range, and never panics.
// EncodeStatus and DecodeStatus are the same in base64, as status.forecast
// stores it. OnFold tells the caller of each hour as it ends (the operator
// keeps last week's hits and misses with it); it is not stored.
package forecast
