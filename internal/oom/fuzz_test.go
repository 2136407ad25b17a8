package oom

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks that no record makes Parse panic, that what it returns
// is either a line or an error, and that every string it takes is capped
// and valid UTF-8. Seeds: the kernel logs under testdata and the corpus
// under testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.kmsg"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, rec := range bytes.Split(data, []byte{'\n'}) {
			f.Add(rec)
		}
	}
	f.Fuzz(func(t *testing.T, record []byte) {
		line, ok, err := Parse(record)
		if ok && err != nil {
			t.Fatalf("ok with error %v", err)
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
		if !ok {
			return
		}
		if line.PID <= 0 {
			t.Fatalf("line with pid %d", line.PID)
		}
		for _, s := range []string{line.Task, line.Constraint, line.OOMMemcg, line.TaskMemcg, line.Scope} {
			if len(s) > maxFieldBytes || !utf8.ValidString(s) {
				t.Fatalf("field %q: %d bytes or invalid UTF-8", s, len(s))
			}
		}
		var a Assembler
		a.Add(line)
	})
}
