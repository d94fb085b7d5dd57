// Command modcheck proves that the repository's modules install the way
// users install them, before anything is tagged.
//
// Inside the repository every nested module reaches the root through a
// replace directive, which Go ignores for anyone who depends on the nested
// module. So a nested module that requires a root version that will never
// be a tag (v0.0.0, say) builds here and fails for every user. modcheck
// catches that: it zips the root and the published nested modules from the
// work tree into a module proxy on disk, at the root version the nested
// modules require, and builds a small consumer of each module
// (testdata/consumers) from that proxy alone, with no replace and no
// workspace, as `go get` would.
//
// Usage, from this module's directory (its test runs it over the checkout):
//
//	go run ./modcheck [-root DIR] [-keep]
//
// Third-party modules come from the user's module cache first and then
// from the GOPROXY in force. The consumers have a module cache of their
// own, in .tools/modcache under the root (git-ignored), so that the user's
// never holds a crs version that was not released.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := flag.String("root", "..", "the repository's root directory")
	keep := flag.Bool("keep", false, "keep the proxy and consumers' directory and print its path")
	flag.Parse()
	modcache := filepath.Join(*root, ".tools", "modcache")

	work, err := os.MkdirTemp("", "crs-modcheck-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "modcheck:", err)
		os.Exit(1)
	}
	consumers, err := filepath.Abs("modcheck/testdata/consumers")
	if err == nil {
		err = check(*root, consumers, work, modcache, os.Stdout)
	}
	if *keep {
		fmt.Println("modcheck: kept", work)
	} else {
		os.RemoveAll(work)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "modcheck:", err)
		os.Exit(1)
	}
}
