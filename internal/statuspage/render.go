package statuspage

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"html/template"
	"io"
	"net/http"
	"strconv"
)

//go:embed status.html
var pageSource string

// pageTemplate is parsed once; html/template escapes every value by the
// context it lands in (text, attribute, URL, CSS), and the values come
// from processes' command lines and environments.
var pageTemplate = template.Must(template.New("status").Parse(pageSource))

// Render writes the HTML page for s.
func Render(w io.Writer, s *Snapshot) error {
	return pageTemplate.Execute(w, newPage(s))
}

// WriteJSON writes s as /status.json serves it. Empty lists are [], never
// null, so `jq '.jvms[]'` works on a node with none.
func WriteJSON(w io.Writer, s *Snapshot) error {
	out := *s
	out.JVMs = orEmpty(out.JVMs)
	out.Kills = orEmpty(out.Kills)
	out.Exits = orEmpty(out.Exits)
	if out.Machine != nil {
		m := *out.Machine
		m.Notices = orEmpty(m.Notices)
		out.Machine = &m
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(&out)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Source returns the current snapshot from what is already in memory; it
// must not read files or the network. It is called once per request, and
// never otherwise.
type Source func() Snapshot

// securityHeaders: the page has no script at all, so the browser may run
// none, and loads nothing from anywhere.
func securityHeaders(h http.Header, contentType string) {
	h.Set("Content-Type", contentType)
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
}

// HTMLHandler serves the page at "/" and 404 anywhere else under it (it is
// mounted on "/", which catches every path no other handler takes).
func HTMLHandler(src Source) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		s := src()
		serve(w, r, "text/html; charset=utf-8", func(b *bytes.Buffer) error { return Render(b, &s) })
	})
}

// JSONHandler serves /status.json.
func JSONHandler(src Source) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := src()
		serve(w, r, "application/json", func(b *bytes.Buffer) error { return WriteJSON(b, &s) })
	})
}

// serve renders into a buffer first, so a failure is a 500 and not half a
// page with a 200.
func serve(w http.ResponseWriter, r *http.Request, contentType string, render func(*bytes.Buffer) error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var b bytes.Buffer
	if err := render(&b); err != nil {
		http.Error(w, "rendering the status page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	securityHeaders(w.Header(), contentType)
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(b.Bytes())
}
