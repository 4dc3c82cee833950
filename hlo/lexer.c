/* lexer: placeholder */
