// Command gen writes docs/configuration.md: `go run ./internal/confdoc/gen`
// from the repository's root, or `go generate ./config/`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/tollgate-dev/tollgate/internal/confdoc"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	out := flag.String("o", "docs/configuration.md", "the file to write")
	flag.Parse()
	keys, err := confdoc.Keys(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "confdoc:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, append(confdoc.Markdown(keys), '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "confdoc:", err)
		os.Exit(1)
	}
}
