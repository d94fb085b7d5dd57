package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

// published are the modules users install, by directory under the root,
// each with the consumer (under testdata/consumers) that installs it.
var published = []struct{ dir, consumer string }{
	{".", "crs"},
	{"redispool", "redispool"},
	{"extensions/prometheus", "prometheus"},
}

// errUnreleasable reports a nested module that requires a root version no
// user can download.
var errUnreleasable = errors.New("requires a root version that can never be a release")

// check publishes the modules under root into a proxy in work and builds
// every consumer from it, with the module cache modcache, writing what it
// does to log.
func check(root, consumers, work, modcache string, log io.Writer) error {
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	if modcache, err = filepath.Abs(modcache); err != nil {
		return err
	}
	rootPath, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return err
	}
	version, err := releaseVersion(root, rootPath)
	if err != nil {
		return err
	}

	proxy := filepath.Join(work, "proxy")
	for _, p := range published {
		dir := filepath.Join(root, p.dir)
		path, err := modulePath(filepath.Join(dir, "go.mod"))
		if err != nil {
			return err
		}
		if err := publish(proxy, dir, module.Version{Path: path, Version: version}); err != nil {
			return fmt.Errorf("publish %s: %w", p.dir, err)
		}
	}
	fmt.Fprintf(log, "modcheck: published %d modules at %s into %s\n", len(published), version, proxy)

	// Only the consumers use modcache, and what it holds of crs is from
	// an earlier run: drop it, keep the rest (and so the build cache's
	// entries for the third-party packages, which name their directory).
	if err := dropModule(modcache, rootPath); err != nil {
		return err
	}
	env, err := consumerEnv(proxy, modcache, rootPath)
	if err != nil {
		return err
	}
	for _, p := range published {
		path, _ := modulePath(filepath.Join(root, p.dir, "go.mod"))
		dir := filepath.Join(work, "consumers", p.consumer)
		if err := os.CopyFS(dir, os.DirFS(filepath.Join(consumers, p.consumer))); err != nil {
			return err
		}
		gomod := "module example.com/consumer\n\ngo 1.26.0\n"
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
			return err
		}
		// The nested module's go.sum vouches for its third-party
		// dependencies, so that only the crs modules go unchecked.
		if sum, err := os.ReadFile(filepath.Join(root, p.dir, "go.sum")); err == nil {
			if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
				return err
			}
		}
		for _, args := range [][]string{
			{"get", path + "@" + version},
			{"build", "-o", os.DevNull, "."},
		} {
			if err := run(dir, env, args...); err != nil {
				return fmt.Errorf("consumer of %s: %w", path, err)
			}
		}
		fmt.Fprintf(log, "modcheck: ok  %s@%s builds from the proxy\n", path, version)
	}
	return nil
}

// dropModule removes every version of the module path, and its
// submodules, from modcache.
func dropModule(modcache, path string) error {
	escaped, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	escaped = filepath.FromSlash(escaped)
	// Its versions are extracted beside it, as path@version; its
	// submodules below it.
	dirs, err := filepath.Glob(filepath.Join(modcache, escaped+"@*"))
	if err != nil {
		return err
	}
	dirs = append(dirs, filepath.Join(modcache, escaped), filepath.Join(modcache, "cache", "download", escaped))
	for _, dir := range dirs {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	return nil
}

// releaseVersion returns the root version that every nested module
// requires: the release they are published with. They must agree, and it
// must be a release version (tags vX.Y.Z), not v0.0.0 or a pseudo-version.
func releaseVersion(root, rootPath string) (string, error) {
	version := ""
	for _, p := range published[1:] {
		gomod := filepath.Join(root, p.dir, "go.mod")
		data, err := os.ReadFile(gomod)
		if err != nil {
			return "", err
		}
		f, err := modfile.Parse(gomod, data, nil)
		if err != nil {
			return "", err
		}
		v := ""
		for _, r := range f.Require {
			if r.Mod.Path == rootPath {
				v = r.Mod.Version
			}
		}
		switch {
		case v == "":
			return "", fmt.Errorf("%s/go.mod does not require %s", p.dir, rootPath)
		case v == "v0.0.0" || module.IsPseudoVersion(v) || semver.Prerelease(v) != "" || semver.Build(v) != "":
			return "", fmt.Errorf("%s/go.mod: %s %s: %w (require the release it is built for; see CONTRIBUTING.md)", p.dir, rootPath, v, errUnreleasable)
		case version != "" && v != version:
			return "", fmt.Errorf("%s/go.mod requires %s %s, but %s/go.mod requires %s: publish them together", p.dir, rootPath, v, published[1].dir, version)
		}
		version = v
	}
	return version, nil
}

// publish writes m, zipped from dir, into the file proxy at proxy.
func publish(proxy, dir string, m module.Version) error {
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	at := filepath.Join(proxy, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	z, err := os.Create(filepath.Join(at, m.Version+".zip"))
	if err != nil {
		return err
	}
	if files, lsErr := sourceFiles(dir); lsErr == nil {
		err = zip.Create(z, m, files)
	} else {
		err = zip.CreateFromDir(z, m, dir) // not a git work tree
	}
	if err != nil {
		z.Close()
		return err
	}
	if err := z.Close(); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	info := fmt.Sprintf(`{"Version":%q,"Time":%q}`, m.Version, time.Now().UTC().Format(time.RFC3339))
	for name, data := range map[string][]byte{
		m.Version + ".mod":  gomod,
		m.Version + ".info": []byte(info),
		"list":              []byte(m.Version + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// sourceFiles lists the files of the module in dir that git tracks or
// would track (so not .tools/, build output or other ignored files); the
// zip package leaves out those of nested modules.
func sourceFiles(dir string) ([]zip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var files []zip.File
	for _, name := range strings.Split(string(out), "\x00") {
		if name == "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, name)); errors.Is(err, os.ErrNotExist) {
			continue // deleted from the work tree, not yet from the index
		}
		files = append(files, sourceFile{dir: dir, path: name})
	}
	return files, nil
}

// sourceFile is a file of a module's directory, by its slash-separated
// path relative to dir.
type sourceFile struct{ dir, path string }

func (f sourceFile) Path() string { return f.path }
func (f sourceFile) Lstat() (os.FileInfo, error) {
	return os.Lstat(filepath.Join(f.dir, filepath.FromSlash(f.path)))
}
func (f sourceFile) Open() (io.ReadCloser, error) {
	return os.Open(filepath.Join(f.dir, filepath.FromSlash(f.path)))
}

// consumerEnv is the environment of a user outside the repository whose
// only source of crs is the proxy: no workspace, no replace, a module
// cache apart from the user's (which must never hold a crs version that
// was not released), and no checksum database for the crs modules.
func consumerEnv(proxy, modcache, rootPath string) ([]string, error) {
	out, err := exec.Command("go", "env", "GOMODCACHE", "GOPROXY").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("go env printed %q", out)
	}
	// The user's module cache already holds the third-party modules; the
	// configured proxies serve the rest. "direct" is dropped so that a
	// missing crs version fails at once instead of trying its repository.
	proxies := []string{"file://" + filepath.ToSlash(proxy), "file://" + filepath.ToSlash(filepath.Join(lines[0], "cache", "download"))}
	for _, p := range strings.FieldsFunc(lines[1], func(r rune) bool { return r == ',' || r == '|' }) {
		if p != "direct" && p != "off" {
			proxies = append(proxies, p)
		}
	}
	env := []string{
		"GOPROXY=" + strings.Join(proxies, ","),
		"GOMODCACHE=" + modcache,
		"GOFLAGS=-mod=mod -modcacherw",
		"GONOSUMDB=" + rootPath,
		"GONOPROXY=",
		"GOPRIVATE=",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		// The go command indexes a module cache directory by its path
		// alone, trusting a version never to change; here it does, so
		// that a build cache kept from an earlier run would list files
		// the new publication no longer has.
		"GODEBUG=" + strings.TrimPrefix(os.Getenv("GODEBUG")+",goindex=0", ","),
	}
	return append(os.Environ(), env...), nil
}

func run(dir string, env []string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func modulePath(gomod string) (string, error) {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	path := modfile.ModulePath(data)
	if path == "" {
		return "", fmt.Errorf("%s: no module line", gomod)
	}
	return path, nil
}
