// The op variant: one op of a fixed list, with the part of std::variant's
// interface rml uses (index, in-place construction, get, get_if, visit).
// Copying, moving and destroying go through one flat table each, built by a
// pack expansion over the ops. std::variant builds those members by recursive
// instantiation over the whole list of alternatives: with 49 ops, copying and
// moving one op cost 2 s of every translation unit at -O2 (g++ 12).
#pragma once

#include <algorithm>
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

#include "rml/core/error.hpp"

namespace rml {

template <class... Ops>
class OpVariant {
  template <class First, class...>
  struct Front {
    using type = First;
  };

 public:
  static constexpr std::size_t size = sizeof...(Ops);
  /// Where T is in the list (a compile error when it is not there).
  template <class T>
  static constexpr std::size_t index_of = [] {
    constexpr bool same[] = {std::is_same_v<T, Ops>...};
    std::size_t i = 0;
    while (i < size && !same[i]) ++i;
    return i;
  }();
  template <class T>
  static constexpr bool holds_type = (std::is_same_v<T, Ops> || ...);

  /// The first op, its attributes at their defaults (as std::variant).
  OpVariant() : OpVariant(std::in_place_type<typename Front<Ops...>::type>) {}
  template <class T, class... Args>
    requires holds_type<T>
  explicit OpVariant(std::in_place_type_t<T>, Args&&... args) {
    ::new (static_cast<void*>(storage_)) T(std::forward<Args>(args)...);
    index_ = index_of<T>;
  }
  template <class T>
    requires holds_type<std::remove_cvref_t<T>>
  OpVariant(T&& op) : OpVariant(std::in_place_type<std::remove_cvref_t<T>>, std::forward<T>(op)) {}

  OpVariant(const OpVariant& other) {
    static constexpr void (*copy[])(void*, const void*) = {
        +[](void* to, const void* from) { ::new (to) Ops(*static_cast<const Ops*>(from)); }...};
    copy[other.index_](storage_, other.storage_);
    index_ = other.index_;
  }
  OpVariant(OpVariant&& other) noexcept { move_from(other); }
  OpVariant& operator=(const OpVariant& other) {
    if (this != &other) *this = OpVariant(other);
    return *this;
  }
  OpVariant& operator=(OpVariant&& other) noexcept {
    if (this != &other) {
      destroy();
      move_from(other);
    }
    return *this;
  }
  ~OpVariant() { destroy(); }

  std::size_t index() const { return index_; }

  /// The op, if it is a T.
  template <class T>
  T* get_if() {
    return index_ == index_of<T> ? std::launder(reinterpret_cast<T*>(storage_)) : nullptr;
  }
  template <class T>
  const T* get_if() const {
    return index_ == index_of<T> ? std::launder(reinterpret_cast<const T*>(storage_)) : nullptr;
  }

  /// fn(op) with the op as its own type, through one table of entries.
  template <class Fn, class Self>
  static decltype(auto) visit(Fn& fn, Self& self) {
    using First = typename Front<Ops...>::type;
    using Held = std::conditional_t<std::is_const_v<Self>, const First, First>;
    using Result = decltype(fn(std::declval<Held&>()));
    static constexpr Result (*table[])(Fn&, Self&) = {+[](Fn& f, Self& s) -> Result {
      using Op = std::conditional_t<std::is_const_v<Self>, const Ops, Ops>;
      return f(*std::launder(reinterpret_cast<Op*>(s.storage_)));
    }...};
    return table[self.index_](fn, self);
  }

 private:
  void move_from(OpVariant& other) noexcept {
    static constexpr void (*move[])(void*, void*) = {
        +[](void* to, void* from) { ::new (to) Ops(std::move(*static_cast<Ops*>(from))); }...};
    move[other.index_](storage_, other.storage_);
    index_ = other.index_;
  }
  void destroy() {
    static constexpr void (*destroy_one[])(void*) = {+[](void* op) { static_cast<Ops*>(op)->~Ops(); }...};
    destroy_one[index_](storage_);
  }

  alignas(Ops...) std::byte storage_[std::max({sizeof(Ops)...})];
  std::size_t index_ = 0;
};

/// The op `v` holds, if it is a T (std::get_if's form).
template <class T, class... Ops>
T* get_if(OpVariant<Ops...>* v) {
  return v ? v->template get_if<T>() : nullptr;
}
template <class T, class... Ops>
const T* get_if(const OpVariant<Ops...>* v) {
  return v ? v->template get_if<T>() : nullptr;
}

/// The op `v` holds, which must be a T.
template <class T, class... Ops>
T& get(OpVariant<Ops...>& v) {
  if (T* op = v.template get_if<T>()) return *op;
  fail(ErrorCode::internal, "op '", T::name, "' asked of a node holding op number ", v.index());
}
template <class T, class... Ops>
const T& get(const OpVariant<Ops...>& v) {
  if (const T* op = v.template get_if<T>()) return *op;
  fail(ErrorCode::internal, "op '", T::name, "' asked of a node holding op number ", v.index());
}

}  // namespace rml
