package yarn

import "testing"

// TestEnforce: each Hadoop line's ContainersMonitorImpl.checkLimit on
// the fixtures' settings. Stock settings on Apache 3.3 (strict enforcement
// on by default, no memory cgroups) enforce nothing: YARN-11967.
func TestEnforce(t *testing.T) {
	for _, tc := range []struct {
		file, version string
		rule, fix     string
		enforcer, why string
		pmem, vmem    bool
	}{
		{"yarn-site-stock.xml", "2.10.2", Rule2, Fix11967No, "polling", WhyPolling, true, true},
		{"yarn-site-stock.xml", "3.2.4", Rule32, Fix11967No, "none", WhyStrictNoCgroup, false, false},
		{"yarn-site-stock.xml", "3.3.6", Rule33, Fix11967No, "none", WhyStrictNoCgroup, false, false},
		{"yarn-site-stock.xml", "3.4.1", Rule33, Fix11967No, "none", WhyStrictNoCgroup, false, false},
		{"yarn-site-stock.xml", "3.5.0-SNAPSHOT", Rule33, Fix11967Yes, "polling", WhyPolling, true, true},
		// A vendor build may carry the fix or not: on these settings that
		// decides, so nothing is claimed.
		{"yarn-site-stock.xml", "3.3.6-amzn-2", Rule33, Fix11967Unknown, "unknown", WhyFixUnknown, false, false},
		{"yarn-site-stock.xml", "", RuleUnknown, Fix11967Unknown, "unknown", WhyVersionUnknown, false, false},
		// The way round it: enforced=false; every line polls, and a vendor
		// build needs no answer about the fix.
		{"yarn-site-polling.xml", "3.3.6-amzn-2", Rule33, Fix11967Unknown, "polling", WhyPolling, true, false},
		{"yarn-site-polling.xml", "", RuleUnknown, Fix11967Unknown, "polling", WhyPolling, true, false},
		{"yarn-site-emr.xml", "3.2.1-amzn-8", Rule32, Fix11967Unknown, "unknown", WhyFixUnknown, false, false},
		// Memory cgroups with a hard limit: the kernel, on every line.
		{"yarn-site-cgroups-strict.xml", "3.3.6", Rule33, Fix11967No, "kernel", WhyCgroupLimit, false, false},
		{"yarn-site-cgroups-strict.xml", "3.2.2.7.1.9.0-387", Rule32, Fix11967Unknown, "kernel", WhyCgroupLimit, false, false},
		// 3.0 and 3.1 may follow 2.x's rule or 3.2's: where those
		// disagree, nothing is claimed; where they agree, the answer holds.
		{"yarn-site-stock.xml", "3.1.4", RuleUnknown, Fix11967Unknown, "unknown", WhyVersionUnknown, false, false},
		{"yarn-site-polling.xml", "3.1.4", RuleUnknown, Fix11967Unknown, "polling", WhyPolling, true, false},
		{"yarn-site-cgroups-strict.xml", "2.10.2", Rule2, Fix11967No, "polling+kernel", WhyCgroupLimit, true, false},
		// Elastic alone: 3.2 leaves it to the handler, 3.3 polls as well.
		{"yarn-site-elastic.xml", "3.2.4", Rule32, Fix11967No, "elastic", WhyElastic, false, false},
		{"yarn-site-elastic.xml", "3.3.6", Rule33, Fix11967No, "polling+elastic", WhyElasticPolling, true, false},
		// Strict and elastic: 3.2's monitor asks whether the cgroup is
		// under OOM; 3.3 polls.
		{"yarn-site-strict-elastic.xml", "3.2.4", Rule32, Fix11967No, "under_oom+elastic", WhyUnderOOM, false, false},
		{"yarn-site-strict-elastic.xml", "3.3.6", Rule33, Fix11967No, "polling+elastic", WhyElasticPolling, true, true},
		// The monitor off: nothing polls, on any line.
		{"yarn-site-monitor-off.xml", "3.5.0", Rule33, Fix11967Yes, "none", WhyMonitorOff, false, false},
		{"yarn-site-dataproc.xml", "3.3.6", Rule33, Fix11967No, "none", WhyStrictNoCgroup, false, false},
		{"yarn-site-dataproc.xml", "3.5.0", Rule33, Fix11967Yes, "none", WhyChecksOff, false, false},
	} {
		c, err := ParseSiteXML(fixture(t, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		e := Enforce(c, tc.version)
		if e.Rule != tc.rule || e.YARN11967 != tc.fix || e.Enforcer() != tc.enforcer || e.Why != tc.why || e.PmemCheck != tc.pmem || e.VmemCheck != tc.vmem {
			t.Errorf("%s on %q: rule %s fix %s enforcer %s why %s pmem %v vmem %v, want %s %s %s %s %v %v", tc.file, tc.version,
				e.Rule, e.YARN11967, e.Enforcer(), e.Why, e.PmemCheck, e.VmemCheck, tc.rule, tc.fix, tc.enforcer, tc.why, tc.pmem, tc.vmem)
		}
	}
}
