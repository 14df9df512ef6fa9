package text

import (
	"strings"
	"unicode"
)

// valueClass maps words that are values of a few closed, well-known
// classes to the attribute that holds them.
var valueClass = map[string][]string{}

func init() {
	add := func(class []string, words string) {
		for _, w := range strings.Split(words, ",") {
			valueClass[strings.TrimSpace(w)] = class
		}
	}
	add([]string{"day"}, "monday,tuesday,wednesday,thursday,friday,saturday,sunday,mondays,tuesdays,wednesdays,thursdays,fridays,saturdays,sundays,weekday,weekdays,weekend,weekends")
	add([]string{"month"}, "january,february,march,april,june,july,august,september,october,november,december")
	add([]string{"gender", "sex"}, "male,female,males,females,men,women,man,woman")
	add([]string{"country"}, "afghanistan,albania,algeria,argentina,armenia,australia,austria,bangladesh,belgium,bolivia,brazil,bulgaria,cambodia,cameroon,canada,chile,china,colombia,croatia,cuba,czechia,denmark,ecuador,egypt,estonia,ethiopia,finland,france,germany,ghana,greece,guatemala,hungary,iceland,india,indonesia,iran,iraq,ireland,israel,italy,jamaica,japan,kazakhstan,kenya,korea,kuwait,latvia,lebanon,libya,lithuania,luxembourg,malaysia,mexico,mongolia,morocco,nepal,netherlands,nigeria,norway,pakistan,panama,paraguay,peru,philippines,poland,portugal,qatar,romania,russia,serbia,singapore,slovakia,slovenia,somalia,spain,sudan,sweden,switzerland,syria,taiwan,tanzania,thailand,tunisia,uganda,ukraine,uruguay,usa,uk,venezuela,vietnam,yemen,zambia,zimbabwe,american,british,canadian,australian,indian,chinese,japanese,french,german,italian,spanish,mexican,brazilian,russian,dutch,swedish,norwegian,danish,finnish,polish,korean,irish,scottish,portuguese,greek,turkish,egyptian,argentine,belgian,swiss,austrian")
	add([]string{"state"}, "alabama,alaska,arizona,arkansas,california,colorado,connecticut,delaware,florida,hawaii,idaho,illinois,indiana,iowa,kansas,kentucky,louisiana,maine,maryland,massachusetts,michigan,minnesota,mississippi,missouri,montana,nebraska,nevada,ohio,oklahoma,oregon,pennsylvania,tennessee,texas,utah,vermont,virginia,wisconsin,wyoming")
	add([]string{"continent"}, "africa,antarctica,asia,europe,oceania,african,asian,european")
}

// ValueClasses returns, for each word of s that is a value of a
// well-known class (a weekday, a month, a gender, a country or its
// people, a continent), the attributes that hold such values (day,
// month, gender and sex, country, continent), analysed, with the word
// each came from: a question about "female cast" means a gender column
// or table, though no identifier says female.
func ValueClasses(s string) (classes, from []string) {
	for _, w := range Words(s) {
		for _, c := range valueClass[w] {
			classes = append(classes, term(c))
			from = append(from, w)
		}
	}
	return classes, from
}

// nameClasses are the attributes a proper name is a value of: a name
// column, or a table of people.
var nameClasses = []string{"name", "person"}

// ProperNames returns the runs of two or more capitalised words of s
// after its first, within one clause ("Michael Bay", "Harrison Ford",
// "Dawn of the Planet" stops at "of"), each with the classes that hold
// such values, analysed. A question names the person or company it asks
// about by value; the caller keeps only the names no identifier uses.
func ProperNames(s string) (names [][]string, classes []string) {
	var cur []string
	flush := func() {
		if len(cur) >= 2 {
			names = append(names, cur)
		}
		cur = nil
	}
	for i, f := range strings.Fields(s) {
		w := strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if i > 0 && w != "" && unicode.IsUpper([]rune(w)[0]) && len(Words(w)) > 0 {
			cur = append(cur, w)
		} else {
			flush()
		}
		if strings.ContainsAny(f, ".,;:!?()\"") {
			flush() // a clause or a quotation ends here
		}
	}
	flush()
	if len(names) == 0 {
		return nil, nil
	}
	for _, c := range nameClasses {
		classes = append(classes, term(c))
	}
	return names, classes
}
