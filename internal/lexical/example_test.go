package lexical_test

import (
	"fmt"

	"github.com/agentmem-sdk/agentmem/internal/lexical"
)

func ExampleTokenize() {
	fmt.Println(lexical.Tokenize("Why does parseConfig skip SHOP_REGION? 数据库迁移"))
	fmt.Println(lexical.Tokenize("What kind of activities is Melanie researching?"))
	// Output:
	// [parseconfig pars config skip shop_region shop region 数据 据库 库迁 迁移]
	// [activ melani research]
}

func ExampleIndex() {
	ix := lexical.NewIndex(
		lexical.Document{Key: "cats.md", Name: "Caroline s4 fact 1", Body: "Caroline adopted two cats, Luna and Milo."},
		lexical.Document{Key: "deploy.md", Name: "Deploy days", Body: "Deploys happen on Tuesdays."},
	)
	for _, h := range ix.Search("When did Caroline adopt her cat?", 5, nil) {
		fmt.Println(h.Key, h.Matched)
	}
	ix.Delete("cats.md")
	fmt.Println(len(ix.Search("cat", 5, nil)))
	// Output:
	// cats.md 3
	// 0
}
