package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	out := flag.String("o", "docs/configuration.md", "the file to write")
	flag.Parse()
	keys, err := Keys(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "confdoc:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, append(Markdown(keys), '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "confdoc:", err)
		os.Exit(1)
	}
}
