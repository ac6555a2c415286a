// Package proxy is the doorman's data path: a listener per doorman port,
// and for each connection the decision to pass it straight to a Ready pod,
// answer it, or hold it, wake the workload and pass it on once a pod is
// Ready, with the bytes already read replayed first, byte-exact.
//
// One connection's life, one file per concern:
//
//   - server.go: the `Server`: the listeners of the doorman ports
//     (`Server.SetRoutes`, `Server.ClosePorts`, with a port's 30-second
//     linger), the registry of live connections, and shutdown
//     (`Server.Shutdown`, `Server.Stop`). `Hooks`, `Keys` and `Config` are
//     declared here too.
//   - table.go: what the doorman knows of workloads and routes (`Workload`,
//     `Route`) and the `Table` of Ready endpoints per Service port.
//   - conn.go: a conn is the connection: its socket, port, route, source,
//     terms, deadlines, caps taken and held bytes, with a method per stage
//     (serve: decide, classify, answer; waitAndPass: wait, pass). Its doc
//     comment says which goroutine owns it, and its held bytes, when.
//   - policy.go: the wake policy as pure functions with table tests; conn
//     gathers the `Facts` and acts on the `Decision`.
//   - ask.go: a workload that asks before waking: the form judged, the
//     click stamped, the asleep page with a fresh button.
//   - held.go: reading a held caller within the byte budgets.
//   - limits.go: the caps (`Limits`, `DefaultLimits`), taken and given back
//     under one lock, and the wake rate limits.
//   - notify.go: the one way anything waits for a change ("something
//     changed, look again"): the Table's endpoints per Service port, a
//     freed passing place, freed held bytes.
//   - wake.go: the waker, which wakes workloads through Hooks.
//   - activity.go: connections passing through, reported as their
//     workloads' activity.
//   - dial.go: the dialer (`Dialer`) and the pool of diallers that dial and
//     replay.
//   - pipe.go, copy.go: the pass-through copy, both ways.
//   - sizes.go: the sizes of the server's tables, for a metric
//     (`Server.TableSizes`).
//
// Kubernetes stays outside: the kube package feeds routes
// (`Server.SetRoutes`) and Ready endpoints (`Table.SetEndpoints`), and
// receives wakes and reports through Hooks. This package must not talk to
// the API server or read the cluster's state itself.
package proxy
