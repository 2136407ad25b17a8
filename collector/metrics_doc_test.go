package collector

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestMetricsReferenceMatchesCode keeps docs/metrics.md and the code in
// step: every metric name the collectors can build (read from the source:
// each prometheus.BuildFQName call, with helper functions' parameters
// resolved at their call sites) has a row in the reference, and every row
// names a metric that exists. Names the exporter's main package adds
// (build info) come from its versioncollector call.
func TestMetricsReferenceMatchesCode(t *testing.T) {
	code, err := metricNamesInSource(".")
	if err != nil {
		t.Fatal(err)
	}
	build, err := buildInfoNames(filepath.Join("..", "cmd", "executor_exporter"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range build {
		code[n] = "cmd/executor_exporter"
	}
	if len(code) < 10 {
		t.Fatalf("found only %d metric names in the source; the extractor is broken: %v", len(code), code)
	}

	doc, err := os.ReadFile(filepath.Join("..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := documentedMetrics(doc)
	for _, name := range sortedKeys(code) {
		if !documented[name] {
			t.Errorf("%s (%s) is not in docs/metrics.md", name, code[name])
		}
	}
	for _, name := range sortedKeys(documented) {
		if _, ok := code[name]; !ok {
			t.Errorf("docs/metrics.md lists %s, which no collector exposes", name)
		}
	}
}

// docRow is a table row of docs/metrics.md whose first cell is a metric
// name in backticks.
var docRow = regexp.MustCompile("(?m)^\\|\\s*`(executor_[a-z0-9_]+)`")

func documentedMetrics(doc []byte) map[string]bool {
	out := map[string]bool{}
	for _, m := range docRow.FindAllSubmatch(doc, -1) {
		out[string(m[1])] = true
	}
	return out
}

func TestDocumentedMetricsParsing(t *testing.T) {
	doc := []byte("| `executor_a_total` | x |\n|`executor_b`|\n`executor_c` in prose\n| executor_d | no backticks |\n")
	got := sortedKeys(documentedMetrics(doc))
	if want := []string{"executor_a_total", "executor_b"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestMetricNamesInSourceResolvesHelpers(t *testing.T) {
	dir := t.TempDir()
	src := `package x
const namespace = "executor"
func helper(sub, name string) string { return BuildFQName(namespace, sub, name+"_bytes") }
var a = BuildFQName(namespace, "node", "oom_kills_total")
var b = helper("jvm", "heap")
var c = helper("jvm", "pool")
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := metricNamesInSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"executor_jvm_heap_bytes", "executor_jvm_pool_bytes", "executor_node_oom_kills_total"}
	if strings.Join(sortedKeys(got), ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", sortedKeys(got), want)
	}

	// A name the extractor cannot work out is an error, not a silent gap.
	bad := `package x
func f(s string) string { return BuildFQName("executor", s, "x") }
var v = f(strings.ToLower("A"))
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := metricNamesInSource(dir); err == nil {
		t.Error("want an error for an unresolvable name")
	}
}

// metricNamesInSource returns every metric name built with BuildFQName in
// the non-test Go files of dir, mapped to where it is built.
func metricNamesInSource(dir string) (map[string]string, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var parsed []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, file)
	}
	x := &nameExtractor{fset: fset, files: parsed, consts: map[string]string{}, funcs: map[string]*ast.FuncDecl{}, names: map[string]string{}}
	for _, f := range parsed {
		x.collectDecls(f)
	}
	for _, f := range parsed {
		for _, decl := range f.Decls {
			x.walk(decl, nil, nil)
		}
	}
	return x.names, errors.Join(x.errs...)
}

type nameExtractor struct {
	fset   *token.FileSet
	files  []*ast.File
	consts map[string]string
	funcs  map[string]*ast.FuncDecl
	names  map[string]string
	errs   []error
}

func (x *nameExtractor) collectDecls(f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				x.funcs[d.Name.Name] = d
			}
		case *ast.GenDecl:
			if d.Tok != token.CONST {
				continue
			}
			for _, spec := range d.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							x.consts[n.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
}

// walk finds BuildFQName calls under node. fn is the enclosing top-level
// function and env binds its parameters, when known.
func (x *nameExtractor) walk(node ast.Node, fn *ast.FuncDecl, env map[string]string) {
	if d, ok := node.(*ast.FuncDecl); ok && fn == nil {
		fn = d
	}
	ast.Inspect(node, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || !isCallTo(call, "BuildFQName") || len(call.Args) != 3 {
			return true
		}
		parts := make([]string, 3)
		for i, arg := range call.Args {
			v, ok := x.eval(arg, env)
			if !ok {
				if fn != nil && env == nil && usesParam(arg, fn) {
					x.resolveThroughCallers(fn)
				} else {
					x.errs = append(x.errs, fmt.Errorf("%s: cannot work out the metric name; teach metrics_doc_test.go", x.fset.Position(call.Pos())))
				}
				return true
			}
			parts[i] = v
		}
		var nonEmpty []string
		for _, p := range parts {
			if p != "" {
				nonEmpty = append(nonEmpty, p)
			}
		}
		x.names[strings.Join(nonEmpty, "_")] = x.fset.Position(call.Pos()).String()
		return true
	})
}

// resolveThroughCallers walks fn again once per call site of it whose
// arguments are all known.
func (x *nameExtractor) resolveThroughCallers(fn *ast.FuncDecl) {
	var params []string
	for _, field := range fn.Type.Params.List {
		for _, n := range field.Names {
			params = append(params, n.Name)
		}
	}
	calls := 0
	for _, caller := range x.funcs {
		x.findCalls(caller, fn.Name.Name, func(call *ast.CallExpr) { calls++; x.bindAndWalk(fn, params, call) })
	}
	// Package-level var initialisers call helpers too.
	for _, f := range x.files {
		for _, decl := range f.Decls {
			if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
				x.findCalls(gd, fn.Name.Name, func(call *ast.CallExpr) { calls++; x.bindAndWalk(fn, params, call) })
			}
		}
	}
	if calls == 0 {
		x.errs = append(x.errs, fmt.Errorf("%s: %s builds metric names from its parameters but is never called with known ones", x.fset.Position(fn.Pos()), fn.Name.Name))
	}
}

func (x *nameExtractor) bindAndWalk(fn *ast.FuncDecl, params []string, call *ast.CallExpr) {
	env := map[string]string{}
	for i, p := range params {
		if i >= len(call.Args) {
			break
		}
		if v, ok := x.eval(call.Args[i], nil); ok {
			env[p] = v
		}
	}
	// Parameters that are not strings (a logger, a func) stay unbound; the
	// name must not need them.
	before := len(x.errs)
	x.walk(fn.Body, fn, env)
	if len(x.errs) > before {
		x.errs = append(x.errs[:before], fmt.Errorf("%s: call of %s with arguments the test cannot read", x.fset.Position(call.Pos()), fn.Name.Name))
	}
}

func (x *nameExtractor) findCalls(node ast.Node, name string, found func(*ast.CallExpr)) {
	ast.Inspect(node, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			switch f := call.Fun.(type) {
			case *ast.Ident: // a function
				if f.Name == name {
					found(call)
				}
			case *ast.SelectorExpr: // a method, on whatever receiver
				if f.Sel.Name == name {
					found(call)
				}
			}
		}
		return true
	})
}

func (x *nameExtractor) eval(e ast.Expr, env map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.Ident:
		if v, ok := env[e.Name]; ok {
			return v, true
		}
		v, ok := x.consts[e.Name]
		return v, ok
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		l, ok1 := x.eval(e.X, env)
		r, ok2 := x.eval(e.Y, env)
		return l + r, ok1 && ok2
	case *ast.ParenExpr:
		return x.eval(e.X, env)
	}
	return "", false
}

func isCallTo(call *ast.CallExpr, name string) bool {
	switch f := call.Fun.(type) {
	case *ast.SelectorExpr:
		return f.Sel.Name == name
	case *ast.Ident:
		return f.Name == name
	}
	return false
}

func usesParam(e ast.Expr, fn *ast.FuncDecl) bool {
	params := map[string]bool{}
	for _, field := range fn.Type.Params.List {
		for _, n := range field.Names {
			params[n.Name] = true
		}
	}
	uses := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && params[id.Name] {
			uses = true
		}
		return true
	})
	return uses
}

// buildInfoNames are the <name>_build_info metrics of versioncollector
// calls in the main package.
func buildInfoNames(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			return nil, err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "NewCollector" || len(call.Args) != 1 {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "versioncollector" {
				if lit, ok := call.Args[0].(*ast.BasicLit); ok {
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, s+"_build_info")
				}
			}
			return true
		})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no versioncollector.NewCollector call in %s", dir)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
