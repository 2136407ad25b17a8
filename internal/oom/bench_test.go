package oom

import "testing"

// BenchmarkParse measures the two records that matter: the common one
// (any other kernel message, which must be rejected cheaply) and an OOM
// kill line.
func BenchmarkParse(b *testing.B) {
	for _, bc := range []struct{ name, record string }{
		{"other", "6,123402,7093543711,-;e1000e: eth0 NIC Link is Up 1000 Mbps Full Duplex, Flow Control: Rx/Tx"},
		{"summary", "6,123404,7093543900,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-0f3a.scope,mems_allowed=0,oom_memcg=/kubepods/burstable/pod6d1c/0f3a,task_memcg=/kubepods/burstable/pod6d1c/0f3a,task=java,pid=63214,uid=185"},
		{"killed", "3,123405,7093544000,-;Memory cgroup out of memory: Killed process 63214 (java) total-vm:9149468kB, anon-rss:4064992kB, file-rss:52176kB, shmem-rss:92kB, UID:185 pgtables:8372kB oom_score_adj:986"},
	} {
		rec := []byte(bc.record)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Parse(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
