package yarn

import "testing"

func TestContainerIDOf(t *testing.T) {
	const id = "container_e07_1700000000000_0043_01_000005"
	env := []byte("PATH=/usr/bin\x00CONTAINER_ID=" + id + "\x00USER=yarn\x00")
	cmd := []byte("/usr/lib/jvm/java/bin/java\x00-server\x00-Xmx4608m\x00-Dspark.yarn.app.container.log.dir=/var/log/hadoop-yarn/containers/application_1700000000000_0043/" + id + "\x00org.apache.spark.executor.YarnCoarseGrainedExecutorBackend\x00")
	cwd := "/mnt/yarn/usercache/hadoop/appcache/application_1700000000000_0043/" + id
	for name, tc := range map[string]struct {
		env, cmd []byte
		cwd      string
		want     string
	}{
		"environ":               {env, nil, "", id},
		"command line":          {nil, cmd, "", id},
		"working directory":     {nil, nil, cwd, id},
		"environ first":         {[]byte("CONTAINER_ID=container_1_2_3_4\x00"), cmd, cwd, "container_1_2_3_4"},
		"bad environ value":     {[]byte("CONTAINER_ID=../../x\x00"), nil, cwd, id},
		"a directory elsewhere": {nil, nil, "/home/u/" + id, ""},
		"nothing":               {nil, []byte("java\x00-version\x00"), "/", ""},
	} {
		got, ok := ContainerIDOf(tc.env, tc.cmd, tc.cwd)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: %q, %v; want %q", name, got, ok, tc.want)
		}
	}
}

func FuzzContainerIDOf(f *testing.F) {
	f.Add([]byte("CONTAINER_ID=container_1_2_3_4\x00"), []byte("-Dspark.yarn.app.container.log.dir=/l/a/container_1_2_3_4"), "/x/appcache/a/container_1_2_3_4")
	f.Fuzz(func(t *testing.T, env, cmd []byte, cwd string) {
		if id, ok := ContainerIDOf(env, cmd, cwd); ok && !ValidContainerID(id) {
			t.Fatalf("invalid id %q", id)
		}
	})
}
