package statuspage

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name; -update rewrites it.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/statuspage -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the rendering (go test ./internal/statuspage -update, then review the diff):\n%s", path, got)
	}
}

func TestRenderGolden(t *testing.T) {
	s := fixture()
	var b bytes.Buffer
	if err := Render(&b, &s); err != nil {
		t.Fatal(err)
	}
	golden(t, "status.golden.html", b.Bytes())

	b.Reset()
	if err := WriteJSON(&b, &s); err != nil {
		t.Fatal(err)
	}
	golden(t, "status.golden.json", b.Bytes())
}

// TestRenderFacts checks, apart from the golden file, what an on-call
// engineer must see at once.
func TestRenderFacts(t *testing.T) {
	s := fixture()
	var b bytes.Buffer
	if err := Render(&b, &s); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		`Interruption notice: spot-interruption pending, at 2026-03-14 09:28:53 UTC`,
		`<dt>Instance type</dt><dd>r6i.2xlarge</dd>`,
		`<dt>Lifecycle</dt><dd>spot</dd>`,
		// Executor 10: 4 GiB heap max + 300 MiB non-heap in a 5 GiB container.
		`<tr class="fits" data-pid="4242">`,
		// Executor 2: a 1 GiB heap max cannot fit a 1 GiB container beside non-heap.
		`<tr class="over" data-pid="4100">`,
		`does not fit: 120 MiB over`,
		// Executor 3: 2 GiB + 200 MiB + 600 MiB of Python in 3000 MiB.
		`<tr class="tight" data-pid="4300">`,
		`<td class="id">etl/etl-exec-3</td>`,
		`6 JVMs, 1 that cannot fit its container; 4 recent OOM kills`,
		// Executor 4 publishes no hsperfdata: its heap is unknown, its RSS is not.
		`<div class="sub no-counters">no hsperfdata: perf_disable_shared_mem</div>`,
		`heap unknown; resident 800 MiB of 1 GiB`,
		`Spark executor 1 of spark-4f2a (pid 4001) in etl/etl-exec-1`,
		`<span class="cause cause-heap">heap</span>`,
		`<div class="advice">lower -Xmx (spark.executor.memory) or raise the limit</div>`,
		`<span class="cause cause-native">native</span>: <span class="region">malloc</span>`,
		`<dt>sampled</dt><dd>1.5s before the kill was read</dd>`,
		`process 777 (python3) in etl/etl-driver`,
		// A PySpark worker killed in executor 3's container, the JVM alive.
		`process 4388 (python3) of Spark executor 3 of spark-4f2a (pid 4300) in etl/etl-exec-3`,
		`<div class="sub pressed" title="Share of the last 10 s`,
		`<td>Spark executor 1 of spark-4f2a (pid 4001) in etl/etl-exec-1</td><td class="exit-reason">oom_killed</td>`,
		`<a href="/metrics">Metrics</a>`,
		`<span id="version">1.2.0 (branch: main, revision: abc)</span>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Drivers first, then executors by executor id as a number.
	order := []string{`data-pid="3900"`, `data-pid="4100"`, `data-pid="4300"`, `data-pid="4500"`, `data-pid="4242"`, `data-pid="1200"`}
	last := -1
	for _, o := range order {
		i := strings.Index(html, o)
		if i < last {
			t.Errorf("row %s out of order", o)
		}
		last = i
	}
}

func TestRenderEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := Render(&b, &Snapshot{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Not known yet",
		"the JVMs have not been sampled yet",
		"The kernel log is not followed",
		"Executor exits are not counted (the exits collector is disabled).",
		`0 JVMs, 0 that cannot fit its container; 0 recent OOM kills`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the empty page lacks %q:\n%s", want, b.String())
		}
	}
}

// fillStrings sets every string reachable from v (struct fields, slice
// elements, pointees) to s.
func fillStrings(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Pointer:
		if !v.IsNil() {
			fillStrings(v.Elem(), s)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fillStrings(v.Field(i), s)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			fillStrings(v.Index(i), s)
		}
	}
}

// TestRenderEscapes: every string on the page can come from a process's
// command line, environment, a metadata service or the kernel log. Each
// payload lands as text, never as an element, an attribute, a URL or CSS:
// the rendered page is tokenized as a browser would and every element and
// attribute must be the template's own.
func TestRenderEscapes(t *testing.T) {
	for _, payload := range []string{
		`<script>alert(1)</script>`,
		`"><img src=x onerror=alert(1)>`,
		`' onmouseover='alert(1)`,
		`javascript:alert(1)`,
		`</style><script>alert(1)</script>`,
		"x;}body{background:url(//evil)}",
		"100%;background:red",
	} {
		t.Run(payload, func(t *testing.T) {
			s := fixture()
			s.Exits = []Exit{{Time: fixtureTime, Identity: Identity{PID: 1, Role: "executor"}}}
			s.ExitsCounted = true
			fillStrings(reflect.ValueOf(&s).Elem(), payload)
			var b bytes.Buffer
			if err := Render(&b, &s); err != nil {
				t.Fatal(err)
			}
			checkOnlyOwnMarkup(t, b.String(), payload)
		})
	}
}

// ownElements are the elements the template writes.
var ownElements = map[string]bool{
	"html": true, "head": true, "meta": true, "title": true, "style": true, "body": true, "h1": true, "h2": true,
	"nav": true, "a": true, "p": true, "span": true, "div": true, "dl": true, "dt": true, "dd": true, "table": true,
	"thead": true, "tbody": true, "tr": true, "th": true, "td": true, "strong": true, "footer": true,
}

// ownStyle is the only inline style a value may reach: a bar's width or
// the limit mark's position, a number.
var ownStyle = regexp.MustCompile(`^((width|left):[0-9.]+%|background:#[0-9a-f]+(;width:2px)?)$`)

// safeLink: a relative link (the metrics path is the operator's flag) or
// the docs' https one; never another scheme.
func safeLink(href string) bool {
	u, err := url.Parse(href)
	return err == nil && (u.Scheme == "" || u.Scheme == "https")
}

func checkOnlyOwnMarkup(t *testing.T, page, payload string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(page))
	styles, texts := 0, 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		tok := z.Token()
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			if !ownElements[tok.Data] {
				t.Errorf("payload %q made a <%s> element", payload, tok.Data)
			}
			if tok.Data == "style" {
				styles++
			}
			for _, a := range tok.Attr {
				switch {
				case strings.HasPrefix(a.Key, "on"):
					t.Errorf("payload %q made an event handler %s=%q", payload, a.Key, a.Val)
				case a.Key == "href" && !safeLink(a.Val):
					t.Errorf("payload %q made a link to %q", payload, a.Val)
				case a.Key == "style" && !ownStyle.MatchString(a.Val):
					t.Errorf("payload %q reached a style attribute: %q", payload, a.Val)
				case !map[string]bool{"href": true, "style": true, "class": true, "id": true, "title": true, "data-pid": true,
					"lang": true, "charset": true, "name": true, "content": true}[a.Key]:
					t.Errorf("payload %q made an attribute %s=%q", payload, a.Key, a.Val)
				}
			}
		case html.TextToken:
			if strings.Contains(tok.Data, payload) {
				texts++
			}
		}
	}
	if styles != 1 {
		t.Errorf("payload %q: %d <style> elements, want the page's own one", payload, styles)
	}
	if texts == 0 {
		t.Errorf("payload %q shows nowhere as text", payload)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	s := fixture()
	var b bytes.Buffer
	if err := WriteJSON(&b, &s); err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("status.json does not decode to the snapshot it was made from:\n%s", b.String())
	}
	// The documented names scripts use.
	for _, key := range []string{`"jvms"`, `"heap_max_bytes"`, `"container_limit_bytes"`, `"oom_kills"`, `"advice"`, `"interruption_notices"`, `"executor_id"`} {
		if !strings.Contains(b.String(), key) {
			t.Errorf("status.json lacks %s", key)
		}
	}
}

func TestJSONEmptyListsAreArrays(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, &Snapshot{Machine: &Machine{}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"jvms": []`, `"oom_kills": []`, `"exits": []`, `"interruption_notices": []`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status.json of an empty node lacks %s:\n%s", want, b.String())
		}
	}
}

func TestHandlers(t *testing.T) {
	calls := 0
	src := func() Snapshot { calls++; return fixture() }
	html, js := HTMLHandler(src), JSONHandler(src)
	for _, tc := range []struct {
		h            http.Handler
		method, path string
		code         int
		contentType  string
		body         string
	}{
		{html, "GET", "/", 200, "text/html; charset=utf-8", "Executor Exporter"},
		{html, "HEAD", "/", 200, "text/html; charset=utf-8", ""},
		{html, "GET", "/nope", 404, "", ""},
		{html, "POST", "/", 405, "", ""},
		{js, "GET", "/status.json", 200, "application/json", `"instance_type": "r6i.2xlarge"`},
	} {
		rec := httptest.NewRecorder()
		tc.h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, rec.Code, tc.code)
			continue
		}
		if tc.code != 200 {
			continue
		}
		if ct := rec.Header().Get("Content-Type"); ct != tc.contentType {
			t.Errorf("%s %s: Content-Type %q, want %q", tc.method, tc.path, ct, tc.contentType)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'") {
			t.Errorf("%s %s: Content-Security-Policy %q", tc.method, tc.path, csp)
		}
		if !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("%s %s: body lacks %q", tc.method, tc.path, tc.body)
		}
		if tc.method == "HEAD" && rec.Body.Len() != 0 {
			t.Errorf("HEAD / sent a body")
		}
	}
	if calls != 4 {
		t.Errorf("the source was asked %d times for 4 answered GET/HEAD requests, want once each", calls)
	}
}
