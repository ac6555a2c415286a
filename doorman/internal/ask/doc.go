// Package ask decides, for a paused workload with wake.mode Ask, what a
// request gets: the asleep page, a wake, one of the page's refusals, or the
// 503 (docs/design/ask.md).
// It owns the Wake it token, the wake key ring and the reading of the
// button's form. It is pure: no sockets, no client, no clock of its own,
// no randomness but the reader it is given. It renders nothing (package
// page does; Kind.Notice names the page's words) and writes nothing (the
// doorman does).
//
// How the doorman uses it:
//
//  1. Keys. At start and then at least once a minute (and soon after a
//     TokenUnknownKey), get the wake key Secret by name. ParseSecret its
//     data; on an error (ErrEmpty for the chart's empty Secret or an
//     emptied one, anything else for garbage) Refill and update the Secret
//     with Keys.Data() under the resourceVersion read; on a conflict get it
//     again and use what another pod wrote. Then ring = ring.Observe(keys,
//     now), swapped in whole. A Secret that is not found leaves the ring as
//     it is.
//  2. A connection classify.ClassifyHead judges Asleep (Ask, HTTP, not a
//     probe or a hidden file): Judge its head, with the bytes past the
//     head, the workload, its status.pause.startedAt, the ring, its
//     napwake.dev/last-request and now. On NeedMore read on,
//     to at most MaxBodyBytes past the head (or until the caller stops),
//     and Judge again, with Final once no more will come.
//  3. Answer by Kind, as the table below says. A fresh token is
//     Issue(ring.Signer(now), workload, pausedAt, now). Nothing a click
//     sent is passed on to the app: the doorman answers it and closes, as
//     for every answer here.
//
// The answers:
//
//	PageLoad, OtherForm  page.AsleepPage (200) with a fresh token
//	Expired              the same with Kind.Notice(), NoticeExpired (403)
//	OtherAddress         the same, NoticeOtherAddress (403)
//	OldBrowser           the same, NoticeOldBrowser (403)
//	TooSoon              the same, NoticeTooSoon (429, Retry-After: 60)
//	Unavailable          page.Asleep (503, Retry-After: 300), JSON when
//	                     WantsJSON; counted as turned away
//	Wake                 stamp napwake.dev/last-request, guarded by the
//	                     resourceVersion (on a conflict read it again and
//	                     answer TooSoon if RecentWake says so); answer with
//	                     page.Waking for the same Host and Path, and treat
//	                     the workload as waking from then on
//
// The waking-up page answers the click itself, rather than a 303 to the
// page: the browser stays on the address the person opened (the doorman may
// see another path, behind an ingress that strips a prefix, so it cannot
// name it), the page shows at once whichever pod the next request reaches,
// and its reload (a meta refresh, which browsers send as a GET, not a
// repeated post) reaches the app once it is Ready.
package ask
