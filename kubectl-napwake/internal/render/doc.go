// Package render turns ManagedWorkloads, their events and the build's
// version into the text `kubectl napwake` prints. Every function here is
// pure: objects and a moment in, text out. No client, no clock, no terminal
// probing; the caller decides whether colour is wanted. That keeps the output
// golden-testable byte for byte.
package render
