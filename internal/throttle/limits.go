package throttle

// SetLimits takes new limits (a configuration reload) and keeps every
// count: failures recorded so far are judged by the new limits, and
// attempts waiting their turn look again. cfg must be valid; its clock is
// ignored, the throttle keeps its own.
//
// Every limit is read under t.mu; the clock is t.now, set once by New and
// read without it.
func (t *Throttle) SetLimits(cfg Config) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cfg = cfg
	t.setLimits()
	close(t.wake)
	t.wake = make(chan struct{})
}
