package hsperf

// Lookup returns the entry called name. The first call builds an index;
// it is safe for concurrent use.
func (s *Snapshot) Lookup(name string) (Entry, bool) {
	s.indexOnce.Do(func() {
		s.index = make(map[string]int, len(s.Entries))
		for i, e := range s.Entries {
			// HotSpot never writes a name twice; if a file does, the
			// first one wins, as in jstat.
			if _, dup := s.index[e.Name]; !dup {
				s.index[e.Name] = i
			}
		}
	})
	i, ok := s.index[name]
	if !ok {
		return Entry{}, false
	}
	return s.Entries[i], true
}

// Long returns the value of the long counter called name.
func (s *Snapshot) Long(name string) (int64, bool) {
	e, ok := s.Lookup(name)
	if !ok || e.Type != TypeLong {
		return 0, false
	}
	return e.Long, true
}

// Text returns the value of the string counter called name.
func (s *Snapshot) Text(name string) (string, bool) {
	e, ok := s.Lookup(name)
	if !ok || e.Type != TypeByte {
		return "", false
	}
	return e.String, true
}
