// Command postfloor is what `walkie post FILE --from WHO --body-file BODY`
// does to the record, in a program that links the record package and
// nothing else: BenchmarkPostProcess runs it beside walkie post, so the
// difference is what walkie's own start-up (every other package's
// initialisation) adds to a post.
//
//	postfloor FILE WHO BODY
package main

import (
	"fmt"
	"os"

	"github.com/walkie-sh/walkie/walkie"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: postfloor FILE WHO BODY")
		os.Exit(2)
	}
	body, err := os.ReadFile(os.Args[3])
	if err == nil {
		_, err = walkie.Append(os.Args[1], walkie.Post{From: os.Args[2], Body: body})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
