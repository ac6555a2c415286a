package proxy

// Names of the tables TableSizes reports, the values of the
// napwake_doorman_table_entries metric's table label.
const (
	TableListeners       = "listeners"        // doorman ports listened on, lingering ones included
	TableConnections     = "connections"      // live sockets, callers and pods
	TableServiceKeys     = "service_keys"     // routed Service ports with their endpoints
	TableLastWakes       = "last_wakes"       // the once-per-pause wake memo, by workload
	TableWakeSources     = "wake_sources"     // per-source wake limiters
	TableHeldKeys        = "held_keys"        // held-place counters by key
	TablePassingKeys     = "passing_keys"     // passing-place counters by key
	TablePassingActivity = "passing_activity" // workloads with connections passing through
	TableWakeRetriers    = "wake_retriers"    // answered wakes' retry loops, one per workload at most
)

// TableNames lists every table TableSizes reports, in a fixed order.
var TableNames = []string{TableListeners, TableConnections, TableServiceKeys, TableLastWakes,
	TableWakeSources, TableHeldKeys, TablePassingKeys, TablePassingActivity, TableWakeRetriers}

// TableSizes counts the entries of the server's maps keyed by port,
// connection, Service, workload or source, each under its own lock, so a
// soak can see none of them grow without bound.
func (s *Server) TableSizes() map[string]int {
	sizes := make(map[string]int, len(TableNames))
	s.mu.Lock()
	sizes[TableListeners], sizes[TableConnections] = len(s.listeners), len(s.conns)
	s.mu.Unlock()
	s.table.mu.Lock()
	sizes[TableServiceKeys] = len(s.table.keys)
	s.table.mu.Unlock()
	s.waker.mu.Lock()
	sizes[TableLastWakes], sizes[TableWakeSources] = len(s.waker.lastWake), len(s.waker.limiter.sources)
	sizes[TableWakeRetriers] = len(s.waker.retriers)
	s.waker.mu.Unlock()
	s.caps.mu.Lock()
	sizes[TableHeldKeys], sizes[TablePassingKeys] = len(s.caps.held.per), len(s.caps.passing.per)
	s.caps.mu.Unlock()
	s.activity.mu.Lock()
	sizes[TablePassingActivity] = len(s.activity.per)
	s.activity.mu.Unlock()
	return sizes
}
