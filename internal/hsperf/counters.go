package hsperf

import "strings"

// Bounds on the indexes taken from counter names. HotSpot uses at most two
// generations of three spaces and three collectors; the slack admits future
// layouts while keeping a hostile file from growing these tables.
const (
	maxGenerations = 4
	maxSpaces      = 4
	maxCollectors  = 8
)

// counters holds the values Stats needs, gathered in one pass over the
// entries: a pass with a switch is cheaper than a map lookup per name.
type counters struct {
	frequency      int64
	ticks          int64 // sun.os.hrt.ticks, the first one
	ticksSeen      bool
	safepointTicks int64
	vmBeginMillis  int64
	vmEndMillis    int64

	threadsLive, threadsDaemon               int64
	classesLoaded, sharedClassesLoaded       int64
	classesUnloaded, sharedClassesUnloaded   int64
	policyName, vmVersion, fallbackVMVersion string
	javaCommand, vmArgs, vmFlags             string
	metaspace, classSpace                    space
	generations                              [maxGenerations]generation
	collectors                               [maxCollectors]collector
}

type generation struct {
	name        string
	maxCapacity int64
	spaces      [maxSpaces]space
}

type space struct {
	seen                        bool
	name                        string
	used, capacity, maxCapacity int64
}

type collector struct {
	seen               bool
	name               string
	invocations, ticks int64
}

func (c *counters) collect(entries []Entry) {
	for i := range entries {
		c.add(&entries[i])
	}
	c.finish()
}

// add records one entry. It keeps e's strings, not e.
func (c *counters) add(e *Entry) {
	switch name := e.Name; {
	case strings.HasPrefix(name, "sun.gc."):
		c.collectGC(name[len("sun.gc."):], e)
	case name == "sun.os.hrt.frequency":
		c.frequency = e.Long
	case name == "sun.os.hrt.ticks":
		if e.Type == TypeLong && !c.ticksSeen {
			c.ticks, c.ticksSeen = e.Long, true
		}
	case name == "sun.rt.safepointTime":
		c.safepointTicks = e.Long
	case name == "sun.rt.createVmBeginTime":
		c.vmBeginMillis = e.Long
	case name == "sun.rt.createVmEndTime":
		c.vmEndMillis = e.Long
	case name == "java.threads.live":
		c.threadsLive = e.Long
	case name == "java.threads.daemon":
		c.threadsDaemon = e.Long
	case name == "java.cls.loadedClasses":
		c.classesLoaded = e.Long
	case name == "java.cls.sharedLoadedClasses":
		c.sharedClassesLoaded = e.Long
	case name == "java.cls.unloadedClasses":
		c.classesUnloaded = e.Long
	case name == "java.cls.sharedUnloadedClasses":
		c.sharedClassesUnloaded = e.Long
	case name == "java.property.java.vm.version":
		c.vmVersion = e.String
	case name == "java.vm.version":
		c.fallbackVMVersion = e.String
	case name == "sun.rt.javaCommand":
		c.javaCommand = e.String
	case name == "java.rt.vmArgs":
		c.vmArgs = e.String
	case name == "java.rt.vmFlags":
		c.vmFlags = e.String
	}
}

// finish applies the fallbacks once every entry is added.
func (c *counters) finish() {
	if c.vmVersion == "" {
		c.vmVersion = c.fallbackVMVersion
	}
}

// collectGC takes a name with "sun.gc." removed.
func (c *counters) collectGC(name string, e *Entry) {
	switch {
	case strings.HasPrefix(name, "generation."):
		g, rest, ok := cutIndex(name[len("generation."):], maxGenerations)
		if !ok {
			return
		}
		gen := &c.generations[g]
		switch {
		case rest == "name":
			gen.name = e.String
		case rest == "maxCapacity":
			gen.maxCapacity = e.Long
		case strings.HasPrefix(rest, "space."):
			sp, field, ok := cutIndex(rest[len("space."):], maxSpaces)
			if ok {
				gen.spaces[sp].set(field, e)
			}
		}
	case strings.HasPrefix(name, "collector."):
		n, field, ok := cutIndex(name[len("collector."):], maxCollectors)
		if !ok {
			return
		}
		col := &c.collectors[n]
		switch field {
		case "name":
			col.name, col.seen = e.String, true
		case "invocations":
			col.invocations = e.Long
		case "time":
			col.ticks = e.Long
		}
	case strings.HasPrefix(name, "metaspace."):
		c.metaspace.set(name[len("metaspace."):], e)
	case strings.HasPrefix(name, "compressedclassspace."):
		c.classSpace.set(name[len("compressedclassspace."):], e)
	case name == "policy.name":
		c.policyName = e.String
	}
}

// set records one field of a space. A space counts as seen once it has a
// used value: that is what makes it a pool.
func (s *space) set(field string, e *Entry) {
	switch field {
	case "name":
		s.name = e.String
	case "used":
		s.used, s.seen = e.Long, true
	case "capacity":
		s.capacity = e.Long
	case "maxCapacity":
		s.maxCapacity = e.Long
	}
}

// cutIndex splits "N.rest" into N (a decimal below limit) and rest.
func cutIndex(s string, limit int) (int, string, bool) {
	n, i := 0, 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + int(s[i]-'0')
		if n >= limit {
			return 0, "", false
		}
	}
	if i == 0 || i >= len(s) || s[i] != '.' {
		return 0, "", false
	}
	return n, s[i+1:], true
}
