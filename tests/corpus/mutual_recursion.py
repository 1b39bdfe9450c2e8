"""Mutual recursion: even/odd and a recursive-descent expression parser."""


def is_even(n):
    return True if n == 0 else is_odd(n - 1)


def is_odd(n):
    return False if n == 0 else is_even(n - 1)


class Parser:
    """expr := term (('+'|'-') term)* ; term := factor (('*'|'/') factor)* ;
    factor := NUMBER | '(' expr ')' | '-' factor"""

    def __init__(self, text):
        self.tokens = self.tokenize(text)
        self.pos = 0

    @staticmethod
    def tokenize(text):
        tokens = []
        number = ""
        for ch in text:
            if ch.isdigit():
                number += ch
                continue
            if number:
                tokens.append(int(number))
                number = ""
            if ch in "+-*/()":
                tokens.append(ch)
        if number:
            tokens.append(int(number))
        return tokens

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self):
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def expr(self):
        value = self.term()
        while self.peek() in ("+", "-"):
            if self.take() == "+":
                value += self.term()
            else:
                value -= self.term()
        return value

    def term(self):
        value = self.factor()
        while self.peek() in ("*", "/"):
            if self.take() == "*":
                value *= self.factor()
            else:
                value //= self.factor() or 1
        return value

    def factor(self):
        tok = self.take()
        if tok == "(":
            value = self.expr()
            self.take()  # ')'
            return value
        if tok == "-":
            return -self.factor()
        return tok


def hofstadter_f(n):
    return 1 if n == 0 else n - hofstadter_m(hofstadter_f(n - 1))


def hofstadter_m(n):
    return 0 if n == 0 else n - hofstadter_f(hofstadter_m(n - 1))


EXPRESSIONS = [
    "1 + 2 * 3",
    "(1 + 2) * (3 + 4) - -5",
    "((((7))))*((2+3)*(4-(1+1)))",
    "100 / (3 - (2 * (1 + 0))) + 8 * -(2 + 2)",
    "2*(3*(4*(5*(6+1)+1)+1)+1)",
]


def main():
    count = sum(1 for n in range(60) if is_even(n))
    count += is_odd(401)  # 400 frames deep, alternating: past any call-path depth limit
    values = [Parser(text).expr() for text in EXPRESSIONS]
    hof = [hofstadter_f(n) + hofstadter_m(n) for n in range(14)]
    return count, values, hof


if __name__ == "__main__":
    print(main())
