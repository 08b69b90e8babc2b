package monitor

import "fmt"

func ExampleWindowByLabel() {
	i, ok := WindowByLabel("2m")
	fmt.Println(i, ok, Windows[i].Seconds)
	// Output: 2 true 120
}
