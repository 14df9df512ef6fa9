// Command oapiclient runs one search through a client oapi-codegen
// generated from schemaq's /openapi.json (package sq, made by .ci/run
// beside this file): the contract is only as good as what generators
// make of it.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"oapiclient/sq"
)

func main() {
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "oapiclient:", err)
		os.Exit(1)
	}
}

func run(base string) error {
	c, err := sq.NewClientWithResponses(base)
	if err != nil {
		return err
	}
	k := 3
	resp, err := c.SearchWithResponse(context.Background(), &sq.SearchParams{}, sq.SearchJSONRequestBody{Database: "shop", Question: "net revenue from payments last month", K: &k})
	if err != nil {
		return err
	}
	if resp.JSON200 == nil {
		return fmt.Errorf("search: %s: %s", resp.Status(), resp.Body)
	}
	if resp.HTTPResponse.Header.Get("Schemaq-Request-Id") == "" {
		return fmt.Errorf("search: no Schemaq-Request-Id")
	}
	var names []string
	if resp.JSON200.Results != nil {
		for _, r := range *resp.JSON200.Results {
			names = append(names, r.Name)
		}
	}
	if !strings.Contains(strings.Join(names, " "), "public.payments") {
		return fmt.Errorf("search found %v, not public.payments", names)
	}
	// A transport error is the ErrorReply the document declares.
	bad, err := c.SearchWithBodyWithResponse(context.Background(), &sq.SearchParams{}, "text/plain", strings.NewReader("{}"))
	if err != nil {
		return err
	}
	if bad.JSON415 == nil || bad.JSON415.Error == nil || bad.HTTPResponse.Header.Get("Schemaq-Request-Id") == "" {
		return fmt.Errorf("a 415 does not decode as its declared ErrorReply: %s", bad.Body)
	}
	fmt.Printf("generated client: search found %s; a 415 is %s\n", strings.Join(names, ", "), bad.JSON415.Error.Code)
	return nil
}
