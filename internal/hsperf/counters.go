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
	seen                bool
	name                string
	invocations, ticks  int64
	lastEntry, lastExit int64
}

func (c *counters) collect(entries []Entry) {
	for i := range entries {
		c.add(&entries[i])
	}
	c.finish()
}

// add records one entry. It keeps e's strings, not e.
func (c *counters) add(e *Entry) { c.set(targetOf(e.Name), e.Type, e.Long, e.String) }

// finish applies the fallbacks once every entry is added.
func (c *counters) finish() {
	if c.vmVersion == "" {
		c.vmVersion = c.fallbackVMVersion
	}
}

// target is the field of counters an entry's name feeds, found once by
// name so that a Plan can feed it again by offset, without the names. i
// and j index generation (or spaceMetaspace, spaceClass) and space, or the
// collector.
type target struct {
	kind targetKind
	i, j uint8
}

type targetKind uint8

const (
	noTarget targetKind = iota
	tFrequency
	tTicks
	tSafepoint
	tVMBegin
	tVMEnd
	tThreadsLive
	tThreadsDaemon
	tLoaded
	tSharedLoaded
	tUnloaded
	tSharedUnloaded
	tVMVersion
	tFallbackVMVersion
	tJavaCommand
	tVMArgs
	tVMFlags
	tPolicyName
	tGenName
	tGenMax
	tSpaceName
	tSpaceUsed
	tSpaceCapacity
	tSpaceMax
	tCollectorName
	tCollectorInvocations
	tCollectorTime
	tCollectorLastEntry
	tCollectorLastExit
)

// Values of target.i for the two non-heap spaces, past any generation.
const (
	spaceMetaspace = maxGenerations + iota
	spaceClass
)

// targetOf names the field an entry feeds; noTarget for the entries Stats
// does not read.
func targetOf(name string) target {
	var k targetKind
	switch {
	case strings.HasPrefix(name, "sun.gc."):
		return gcTarget(name[len("sun.gc."):])
	case name == "sun.os.hrt.frequency":
		k = tFrequency
	case name == "sun.os.hrt.ticks":
		k = tTicks
	case name == "sun.rt.safepointTime":
		k = tSafepoint
	case name == "sun.rt.createVmBeginTime":
		k = tVMBegin
	case name == "sun.rt.createVmEndTime":
		k = tVMEnd
	case name == "java.threads.live":
		k = tThreadsLive
	case name == "java.threads.daemon":
		k = tThreadsDaemon
	case name == "java.cls.loadedClasses":
		k = tLoaded
	case name == "java.cls.sharedLoadedClasses":
		k = tSharedLoaded
	case name == "java.cls.unloadedClasses":
		k = tUnloaded
	case name == "java.cls.sharedUnloadedClasses":
		k = tSharedUnloaded
	case name == "java.property.java.vm.version":
		k = tVMVersion
	case name == "java.vm.version":
		k = tFallbackVMVersion
	case name == "sun.rt.javaCommand":
		k = tJavaCommand
	case name == "java.rt.vmArgs":
		k = tVMArgs
	case name == "java.rt.vmFlags":
		k = tVMFlags
	}
	return target{kind: k}
}

// gcTarget takes a name with "sun.gc." removed.
func gcTarget(name string) target {
	switch {
	case strings.HasPrefix(name, "generation."):
		g, rest, ok := cutIndex(name[len("generation."):], maxGenerations)
		if !ok {
			return target{}
		}
		switch {
		case rest == "name":
			return target{kind: tGenName, i: uint8(g)}
		case rest == "maxCapacity":
			return target{kind: tGenMax, i: uint8(g)}
		case strings.HasPrefix(rest, "space."):
			sp, field, ok := cutIndex(rest[len("space."):], maxSpaces)
			if ok {
				return spaceTarget(field, g, sp)
			}
		}
	case strings.HasPrefix(name, "collector."):
		n, field, ok := cutIndex(name[len("collector."):], maxCollectors)
		if !ok {
			return target{}
		}
		switch field {
		case "name":
			return target{kind: tCollectorName, i: uint8(n)}
		case "invocations":
			return target{kind: tCollectorInvocations, i: uint8(n)}
		case "time":
			return target{kind: tCollectorTime, i: uint8(n)}
		case "lastEntryTime":
			return target{kind: tCollectorLastEntry, i: uint8(n)}
		case "lastExitTime":
			return target{kind: tCollectorLastExit, i: uint8(n)}
		}
	case strings.HasPrefix(name, "metaspace."):
		return spaceTarget(name[len("metaspace."):], spaceMetaspace, 0)
	case strings.HasPrefix(name, "compressedclassspace."):
		return spaceTarget(name[len("compressedclassspace."):], spaceClass, 0)
	case name == "policy.name":
		return target{kind: tPolicyName}
	}
	return target{}
}

func spaceTarget(field string, i, j int) target {
	var k targetKind
	switch field {
	case "name":
		k = tSpaceName
	case "used":
		k = tSpaceUsed
	case "capacity":
		k = tSpaceCapacity
	case "maxCapacity":
		k = tSpaceMax
	default:
		return target{}
	}
	return target{kind: k, i: uint8(i), j: uint8(j)}
}

// set records an entry's type and value (Entry.Long, Entry.String) in the
// field t names. A space counts as seen once it has a used value: that is
// what makes it a pool.
func (c *counters) set(t target, typ Type, long int64, str string) {
	switch t.kind {
	case tFrequency:
		c.frequency = long
	case tTicks:
		if typ == TypeLong && !c.ticksSeen {
			c.ticks, c.ticksSeen = long, true
		}
	case tSafepoint:
		c.safepointTicks = long
	case tVMBegin:
		c.vmBeginMillis = long
	case tVMEnd:
		c.vmEndMillis = long
	case tThreadsLive:
		c.threadsLive = long
	case tThreadsDaemon:
		c.threadsDaemon = long
	case tLoaded:
		c.classesLoaded = long
	case tSharedLoaded:
		c.sharedClassesLoaded = long
	case tUnloaded:
		c.classesUnloaded = long
	case tSharedUnloaded:
		c.sharedClassesUnloaded = long
	case tVMVersion:
		c.vmVersion = str
	case tFallbackVMVersion:
		c.fallbackVMVersion = str
	case tJavaCommand:
		c.javaCommand = str
	case tVMArgs:
		c.vmArgs = str
	case tVMFlags:
		c.vmFlags = str
	case tPolicyName:
		c.policyName = str
	case tGenName:
		c.generations[t.i].name = str
	case tGenMax:
		c.generations[t.i].maxCapacity = long
	case tSpaceName:
		c.space(t).name = str
	case tSpaceUsed:
		s := c.space(t)
		s.used, s.seen = long, true
	case tSpaceCapacity:
		c.space(t).capacity = long
	case tSpaceMax:
		c.space(t).maxCapacity = long
	case tCollectorName:
		c.collectors[t.i].name, c.collectors[t.i].seen = str, true
	case tCollectorInvocations:
		c.collectors[t.i].invocations = long
	case tCollectorTime:
		c.collectors[t.i].ticks = long
	case tCollectorLastEntry:
		c.collectors[t.i].lastEntry = long
	case tCollectorLastExit:
		c.collectors[t.i].lastExit = long
	}
}

func (c *counters) space(t target) *space {
	switch t.i {
	case spaceMetaspace:
		return &c.metaspace
	case spaceClass:
		return &c.classSpace
	}
	return &c.generations[t.i].spaces[t.j]
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
