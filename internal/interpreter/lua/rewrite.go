package lua

import (
	"fmt"
	"strconv"

	"github.com/yuin/gopher-lua/ast"
)

// meterChunk rewrites a parsed script so that the VM operations that can
// allocate without bound call the sandbox's metering hooks (hooks.go)
// instead, which charge the run's memory budget before they allocate:
//
//  1. a .. b .. c            becomes (concat)(a, b, c);
//  2. t[k] = v and t.k = v   become (set)(t, k, v), and function t.k()
//     and function t:k() definitions likewise;
//  3. a table constructor    becomes (table)({...}, listFields, namedFields),
//     or, when it has a field [k] = v with k anything but a string
//     constant, (fields)(layout, {...}) (see fieldsTable);
//  4. a function expression  becomes (closure)(function ... end); a local
//     function is charged by a (closure)(f) statement right after it, so
//     that it still sees itself for recursion.
//
// A multiple assignment with indexed targets keeps Lua's order: the tables
// and keys are evaluated first, then the values, then the assignments.
//
// The hooks are locals of the main chunk, bound from its arguments. Their
// names are not Lua identifiers, so a script can neither name nor replace
// them. Every other VM operation allocates at most a few words per
// instruction and is bounded by the instruction budget.
func meterChunk(chunk []ast.Stmt) ([]ast.Stmt, error) {
	r := &rewriter{}
	body := r.block(chunk)
	if r.err != nil {
		return nil, r.err
	}
	prologue := &ast.LocalAssignStmt{Names: hookNames, Exprs: []ast.Expr{&ast.Comma3Expr{}}}
	return append([]ast.Stmt{prologue}, body...), nil
}

type rewriter struct {
	temps int
	err   error
}

func (r *rewriter) block(stmts []ast.Stmt) []ast.Stmt {
	out := make([]ast.Stmt, 0, len(stmts))
	for _, s := range stmts {
		out = append(out, r.stmt(s)...)
	}
	return out
}

func (r *rewriter) stmt(s ast.Stmt) []ast.Stmt {
	switch s := s.(type) {
	case *ast.AssignStmt:
		return r.assign(s)
	case *ast.LocalAssignStmt:
		if len(s.Names) == 1 && len(s.Exprs) == 1 {
			if fn, ok := s.Exprs[0].(*ast.FunctionExpr); ok {
				// local function f: f must be in scope in its own body.
				fn.Stmts = r.block(fn.Stmts)
				charge := callStmt(s, hookClosure, ident(s, s.Names[0]))
				return []ast.Stmt{s, charge}
			}
		}
		s.Exprs = r.exprs(s.Exprs)
	case *ast.FuncCallStmt:
		s.Expr = r.expr(s.Expr)
	case *ast.DoBlockStmt:
		s.Stmts = r.block(s.Stmts)
	case *ast.WhileStmt:
		s.Condition = r.expr(s.Condition)
		s.Stmts = r.block(s.Stmts)
	case *ast.RepeatStmt:
		s.Stmts = r.block(s.Stmts)
		s.Condition = r.expr(s.Condition)
	case *ast.IfStmt:
		s.Condition = r.expr(s.Condition)
		s.Then = r.block(s.Then)
		s.Else = r.block(s.Else)
	case *ast.NumberForStmt:
		s.Init = r.expr(s.Init)
		s.Limit = r.expr(s.Limit)
		s.Step = r.expr(s.Step)
		s.Stmts = r.block(s.Stmts)
	case *ast.GenericForStmt:
		s.Exprs = r.exprs(s.Exprs)
		s.Stmts = r.block(s.Stmts)
	case *ast.FuncDefStmt:
		if s.Name.Func == nil {
			// function t:m(...) is t.m = function(self, ...); gopher-lua's
			// compiler adds self only when it compiles the definition.
			s.Func.ParList.Names = append([]string{"self"}, s.Func.ParList.Names...)
			key := &ast.StringExpr{Value: s.Name.Method}
			at(key, s)
			return []ast.Stmt{callStmt(s, hookSet, r.expr(s.Name.Receiver), key, r.expr(s.Func))}
		}
		a := &ast.AssignStmt{Lhs: []ast.Expr{s.Name.Func}, Rhs: []ast.Expr{s.Func}}
		at(a, s)
		return r.assign(a)
	case *ast.ReturnStmt:
		s.Exprs = r.exprs(s.Exprs)
	case *ast.BreakStmt, *ast.LabelStmt, *ast.GotoStmt:
	default:
		r.err = fmt.Errorf("line %d: unsupported statement %T", s.Line(), s)
	}
	return []ast.Stmt{s}
}

// assign rewrites an assignment whose targets include t[k].
func (r *rewriter) assign(s *ast.AssignStmt) []ast.Stmt {
	indexed := false
	for _, l := range s.Lhs {
		if _, ok := l.(*ast.AttrGetExpr); ok {
			indexed = true
		}
	}
	if !indexed {
		s.Rhs = r.exprs(s.Rhs)
		return []ast.Stmt{s}
	}
	if len(s.Lhs) == 1 && len(s.Rhs) == 1 {
		a := s.Lhs[0].(*ast.AttrGetExpr)
		return []ast.Stmt{callStmt(s, hookSet, r.expr(a.Object), r.expr(a.Key), r.expr(s.Rhs[0]))}
	}
	// do
	//   local (t1), (k1), ... = <tables and keys of the indexed targets>
	//   local (v1), (v2), ... = <values>
	//   x = (v1); (set)((t1), (k1), (v2)); ...
	// end
	var places []string
	var placeValues []ast.Expr
	for _, l := range s.Lhs {
		if a, ok := l.(*ast.AttrGetExpr); ok {
			t, k := r.temp(), r.temp()
			places = append(places, t, k)
			placeValues = append(placeValues, r.expr(a.Object), r.expr(a.Key))
		}
	}
	values := make([]string, len(s.Lhs))
	for i := range values {
		values[i] = r.temp()
	}
	evalPlaces := &ast.LocalAssignStmt{Names: places, Exprs: placeValues}
	evalValues := &ast.LocalAssignStmt{Names: values, Exprs: r.exprs(s.Rhs)}
	at(evalPlaces, s)
	at(evalValues, s)
	body := []ast.Stmt{evalPlaces, evalValues}
	next := 0
	for i, l := range s.Lhs {
		if _, ok := l.(*ast.AttrGetExpr); ok {
			t, k := places[next], places[next+1]
			next += 2
			body = append(body, callStmt(s, hookSet, ident(s, t), ident(s, k), ident(s, values[i])))
			continue
		}
		a := &ast.AssignStmt{Lhs: []ast.Expr{l}, Rhs: []ast.Expr{ident(s, values[i])}}
		at(a, s)
		body = append(body, a)
	}
	do := &ast.DoBlockStmt{Stmts: body}
	at(do, s)
	return []ast.Stmt{do}
}

func (r *rewriter) exprs(es []ast.Expr) []ast.Expr {
	for i, e := range es {
		es[i] = r.expr(e)
	}
	return es
}

func (r *rewriter) expr(e ast.Expr) ast.Expr {
	switch e := e.(type) {
	case nil:
		return nil
	case *ast.TrueExpr, *ast.FalseExpr, *ast.NilExpr, *ast.NumberExpr, *ast.StringExpr,
		*ast.Comma3Expr, *ast.IdentExpr:
		return e
	case *ast.AttrGetExpr:
		e.Object = r.expr(e.Object)
		e.Key = r.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if _, isString := f.Key.(*ast.StringExpr); f.Key != nil && !isString {
				return r.fieldsTable(e)
			}
		}
		list, named := 0, 0
		for _, f := range e.Fields {
			if f.Key == nil {
				list++
			} else {
				named++
				f.Key = r.expr(f.Key)
			}
			f.Value = r.expr(f.Value)
		}
		return call(e, hookTable, e, number(e, list), number(e, named))
	case *ast.FuncCallExpr:
		e.Func = r.expr(e.Func)
		e.Receiver = r.expr(e.Receiver)
		e.Args = r.exprs(e.Args)
	case *ast.LogicalOpExpr:
		e.Lhs = r.expr(e.Lhs)
		e.Rhs = r.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		e.Lhs = r.expr(e.Lhs)
		e.Rhs = r.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		e.Lhs = r.expr(e.Lhs)
		e.Rhs = r.expr(e.Rhs)
	case *ast.StringConcatOpExpr:
		// .. is right-associative and the VM folds a chain at once:
		// one hook call for the whole chain.
		var operands []ast.Expr
		var flatten func(ast.Expr)
		flatten = func(x ast.Expr) {
			if c, ok := x.(*ast.StringConcatOpExpr); ok {
				flatten(c.Lhs)
				flatten(c.Rhs)
				return
			}
			operands = append(operands, r.expr(x))
		}
		flatten(e)
		return call(e, hookConcat, operands...)
	case *ast.UnaryMinusOpExpr:
		e.Expr = r.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		e.Expr = r.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		e.Expr = r.expr(e.Expr)
	case *ast.FunctionExpr:
		e.Stmts = r.block(e.Stmts)
		return call(e, hookClosure, e)
	default:
		r.err = fmt.Errorf("line %d: unsupported expression %T", e.Line(), e)
	}
	return e
}

// fieldsTable rewrites a table constructor with a field [k] = v whose key
// is not a string constant. The VM would store such a field as soon as it
// has built the table, and a number key far past the list (for instance
// {[67108863] = 1}) makes it fill every slot up to the key inside one
// instruction, before any hook could charge the table. So the fields are
// evaluated, in their order, into a flat list instead: a list field gives
// its value, a field [k] = v its key and its value. (fields) then builds
// the table from that list, charging each entry before storing it, as
// (set) does. layout has one letter per field: "l" a list field, "k" a
// field with a key, "*" a last list field that is a call or ... and gives
// all its values.
func (r *rewriter) fieldsTable(e *ast.TableExpr) ast.Expr {
	layout := make([]byte, 0, len(e.Fields))
	flat := &ast.TableExpr{}
	at(flat, e)
	for i, f := range e.Fields {
		if f.Key == nil {
			v := r.expr(f.Value)
			if i == len(e.Fields)-1 && multiValued(v) {
				layout = append(layout, '*')
			} else {
				layout = append(layout, 'l')
			}
			flat.Fields = append(flat.Fields, &ast.Field{Value: v})
			continue
		}
		layout = append(layout, 'k')
		k := r.expr(f.Key)
		flat.Fields = append(flat.Fields, &ast.Field{Value: k}, &ast.Field{Value: r.expr(f.Value)})
	}
	l := &ast.StringExpr{Value: string(layout)}
	at(l, e)
	return call(e, hookFields, l, flat)
}

// multiValued reports whether e gives all its values as the last field of
// a constructor or the last argument of a call (as gopher-lua's compiler
// decides).
func multiValued(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.FuncCallExpr:
		return !e.AdjustRet
	case *ast.Comma3Expr:
		return !e.AdjustRet
	}
	return false
}

// temp names a hidden local; parentheses keep it apart from any name a
// script can write.
func (r *rewriter) temp() string {
	r.temps++
	return "(tmp" + strconv.Itoa(r.temps) + ")"
}

// call is a one-value call of a hook, at pos's lines.
func call(pos ast.PositionHolder, hook string, args ...ast.Expr) *ast.FuncCallExpr {
	c := &ast.FuncCallExpr{Func: ident(pos, hook), Args: args, AdjustRet: true}
	at(c, pos)
	return c
}

func callStmt(pos ast.PositionHolder, hook string, args ...ast.Expr) *ast.FuncCallStmt {
	s := &ast.FuncCallStmt{Expr: call(pos, hook, args...)}
	at(s, pos)
	return s
}

func ident(pos ast.PositionHolder, name string) *ast.IdentExpr {
	e := &ast.IdentExpr{Value: name}
	at(e, pos)
	return e
}

func number(pos ast.PositionHolder, n int) *ast.NumberExpr {
	e := &ast.NumberExpr{Value: strconv.Itoa(n)}
	at(e, pos)
	return e
}

// at gives a new node the source lines of the node it stands for, so that
// errors name the script's lines.
func at(n, pos ast.PositionHolder) {
	n.SetLine(pos.Line())
	n.SetLastLine(pos.LastLine())
}
