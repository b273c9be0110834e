package throttle

// SetLimits takes new limits (a configuration reload) and keeps every
// count: failures recorded so far are judged by the new limits, and
// attempts waiting their turn look again. cfg must be valid; its clock is
// ignored, the throttle keeps its own.
//
// Every limit is read under t.mu; the clock (cfg.Now) is read without it,
// which is why it is never written here.
func (t *Throttle) SetLimits(cfg Config) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := &t.cfg
	c.UserFailures, c.UserWindow = cfg.UserFailures, cfg.UserWindow
	c.SourceFailures, c.SourceWindow = cfg.SourceFailures, cfg.SourceWindow
	c.BaseDelay, c.MaxDelay, c.MaxEntries = cfg.BaseDelay, cfg.MaxDelay, cfg.MaxEntries
	c.MaxInFlightPerUser, c.MaxInFlightPerSource = cfg.MaxInFlightPerUser, cfg.MaxInFlightPerSource
	close(t.wake)
	t.wake = make(chan struct{})
}
