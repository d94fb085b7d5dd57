package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
)

// The check over this checkout: every published module builds, outside
// the repository, from a proxy holding nothing but releases.
func TestPublishedModulesBuildFromAProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three consumers from a module proxy; run without -short")
	}
	consumers, err := filepath.Abs("testdata/consumers")
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	modcache := filepath.Join("..", "..", ".tools", "modcache")
	if err := check("../..", consumers, t.TempDir(), modcache, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if got := strings.Count(log.String(), "builds from the proxy"); got != len(published) {
		t.Fatalf("%d consumers built, want %d:\n%s", got, len(published), log.String())
	}
}

// writeTree makes a root module and the published nested modules, each
// requiring the root at the given version.
func writeTree(t *testing.T, versions ...string) string {
	t.Helper()
	root := t.TempDir()
	write := func(dir, gomod string) {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dir, "go.mod"), []byte(gomod), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".", "module example.com/root\n\ngo 1.22\n")
	for i, p := range published[1:] {
		write(p.dir, "module example.com/root/"+p.dir+"\n\ngo 1.22\n\nrequire example.com/root "+versions[i]+"\n\nreplace example.com/root => ../\n")
	}
	return root
}

func TestNestedModuleRequiringV000IsRefused(t *testing.T) {
	for _, v := range []string{"v0.0.0", "v0.0.0-20260101000000-abcdefabcdef", "v1.3.0-rc.1"} {
		root := writeTree(t, "v1.3.0", v)
		_, err := releaseVersion(root, "example.com/root")
		if !errors.Is(err, errUnreleasable) {
			t.Errorf("root required at %s: got %v, want errUnreleasable", v, err)
		}
	}
}

func TestNestedModulesMustRequireTheSameRelease(t *testing.T) {
	root := writeTree(t, "v1.3.0", "v1.4.0")
	if _, err := releaseVersion(root, "example.com/root"); err == nil || !strings.Contains(err.Error(), "publish them together") {
		t.Fatalf("got %v, want a disagreement error", err)
	}
	root = writeTree(t, "v1.3.0", "v1.3.0")
	if v, err := releaseVersion(root, "example.com/root"); err != nil || v != "v1.3.0" {
		t.Fatalf("got %q, %v; want v1.3.0", v, err)
	}
}

// A version republished with other files must build from its new files.
// The go command indexes a package directory in the module cache by path
// and version alone, so a build cache that outlives one run (as CI's may)
// would otherwise list a file that the new version no longer has.
func TestRepublishedVersionBuildsFromItsNewFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a consumer from a module proxy twice; run without -short")
	}
	work := t.TempDir()
	proxy := filepath.Join(work, "proxy")
	modcache := filepath.Join(work, "modcache")
	m := module.Version{Path: "example.com/republished", Version: "v1.0.0"}
	consumer := filepath.Join(work, "consumer")
	writeFiles(t, consumer, map[string]string{
		"go.mod":  "module example.com/consumer\n\ngo 1.22\n",
		"main.go": "package main\n\nimport \"example.com/republished/p\"\n\nfunc main() { p.F() }\n",
	})
	env, err := consumerEnv(proxy, modcache, m.Path)
	if err != nil {
		t.Fatal(err)
	}
	for i, file := range []string{"a.go", "b.go"} {
		src := filepath.Join(work, "src", file)
		writeFiles(t, src, map[string]string{
			"go.mod":    "module " + m.Path + "\n\ngo 1.22\n",
			"p/" + file: "package p\n\nfunc F() {}\n",
		})
		if err := publish(proxy, src, m); err != nil {
			t.Fatal(err)
		}
		if err := dropModule(modcache, m.Path); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(consumer, "go.sum"))
		for _, args := range [][]string{{"get", m.Path + "@" + m.Version}, {"build", "-o", os.DevNull, "."}} {
			if err := run(consumer, env, args...); err != nil {
				t.Fatalf("publication %d (%s): %v", i+1, file, err)
			}
		}
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
