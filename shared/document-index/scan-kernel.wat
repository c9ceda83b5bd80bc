;; The sparse scan's kernel (`scan-kernel.ts` loads it; `npm run build:scan-kernel` compiles this file into
;; `scan-kernel-bytes.ts`, and a test checks the two agree). One page layout, fixed:
;;   SUMS  at 0:       a tile's sums, 32,768 doubles (256 KB), zero between tiles;
;;   SLOTS at 262144:  one list's entries of the tile, uint32 slots (128 KB);
;;   VALS  at 393216:  their float32 values (128 KB);
;;   OUT   at 524288:  the slots `sweep` found, up to 64 uint32;
;;   FOUND at 524544:  their sums, up to 64 doubles;
;;   HEAP  at 525056:  `kth`'s heap, up to 1,024 doubles (8 KB);
;;   MAXES at 533248:  `kth`'s block maxima, 512 doubles (4 KB).
(module
  (memory (export "memory") 9)
  (global $found (mut i32) (i32.const 0))

  ;; Adds weight * VALS[i] into SUMS[SLOTS[i] - base] for i < n: the product in doubles (the float32 value
  ;; promoted), added to the sum, as `addInto` in JavaScript does, so the sums are the same doubles. `$p`
  ;; walks the entries' byte offset (4 a step), `$k` is a sum's byte address.
  (func (export "add") (param $n i32) (param $w f64) (param $base i32)
    (local $p i32) (local $end i32) (local $k i32) (local $end4 i32)
    (local.set $end (i32.shl (local.get $n) (i32.const 2)))
    ;; Four entries a pass while four remain (a list holds a slot once, so the four sums are different ones).
    (local.set $end4 (i32.and (local.get $end) (i32.const -16)))
    (block $fours
      (loop $four
        (br_if $fours (i32.ge_u (local.get $p) (local.get $end4)))
        (local.set $k
          (i32.shl (i32.sub (i32.load offset=262144 (local.get $p)) (local.get $base)) (i32.const 3)))
        (f64.store (local.get $k)
          (f64.add (f64.load (local.get $k))
                   (f64.mul (local.get $w) (f64.promote_f32 (f32.load offset=393216 (local.get $p))))))
        (local.set $k
          (i32.shl (i32.sub (i32.load offset=262148 (local.get $p)) (local.get $base)) (i32.const 3)))
        (f64.store (local.get $k)
          (f64.add (f64.load (local.get $k))
                   (f64.mul (local.get $w) (f64.promote_f32 (f32.load offset=393220 (local.get $p))))))
        (local.set $k
          (i32.shl (i32.sub (i32.load offset=262152 (local.get $p)) (local.get $base)) (i32.const 3)))
        (f64.store (local.get $k)
          (f64.add (f64.load (local.get $k))
                   (f64.mul (local.get $w) (f64.promote_f32 (f32.load offset=393224 (local.get $p))))))
        (local.set $k
          (i32.shl (i32.sub (i32.load offset=262156 (local.get $p)) (local.get $base)) (i32.const 3)))
        (f64.store (local.get $k)
          (f64.add (f64.load (local.get $k))
                   (f64.mul (local.get $w) (f64.promote_f32 (f32.load offset=393228 (local.get $p))))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $four)))
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $k
          (i32.shl (i32.sub (i32.load offset=262144 (local.get $p)) (local.get $base)) (i32.const 3)))
        (f64.store (local.get $k)
          (f64.add (f64.load (local.get $k))
                   (f64.mul (local.get $w) (f64.promote_f32 (f32.load offset=393216 (local.get $p))))))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (br $each))))

  ;; Finds the sums at least `floor` (a positive double) among SUMS[from, end), sixteen at a time (from and
  ;; end multiples of 16), writing their slots to OUT and the sums to FOUND, in order, and zeroing the sixteen
  ;; (the next tile's sums start from zero, with no pass of their own): returns where it stopped, when done
  ;; or when OUT could not take another sixteen (the count in `found`). The sixteen are tested at once: their
  ;; pairwise maximum (`pmax`, one instruction each) against the floor.
  (func (export "sweep") (param $from i32) (param $end i32) (param $floor f64) (result i32)
    (local $i i32) (local $f v128) (local $a i32) (local $j i32) (local $n i32) (local $x f64)
    (local.set $f (f64x2.splat (local.get $floor)))
    (local.set $i (local.get $from))
    (block $done
      (loop $sixteen
        (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
        (br_if $done (i32.gt_u (local.get $n) (i32.const 48)))
        (local.set $a (i32.shl (local.get $i) (i32.const 3)))
        (if (v128.any_true
              (f64x2.ge
                (f64x2.pmax
                  (f64x2.pmax
                    (f64x2.pmax (v128.load (local.get $a)) (v128.load offset=16 (local.get $a)))
                    (f64x2.pmax (v128.load offset=32 (local.get $a)) (v128.load offset=48 (local.get $a))))
                  (f64x2.pmax
                    (f64x2.pmax (v128.load offset=64 (local.get $a)) (v128.load offset=80 (local.get $a)))
                    (f64x2.pmax (v128.load offset=96 (local.get $a)) (v128.load offset=112 (local.get $a)))))
                (local.get $f)))
          (then
            (local.set $j (i32.const 0))
            (loop $each
              (local.set $x (f64.load (i32.add (local.get $a) (i32.shl (local.get $j) (i32.const 3)))))
              (if (f64.ge (local.get $x) (local.get $floor))
                (then
                  (i32.store offset=524288 (i32.shl (local.get $n) (i32.const 2)) (i32.add (local.get $i) (local.get $j)))
                  (f64.store offset=524544 (i32.shl (local.get $n) (i32.const 3)) (local.get $x))
                  (local.set $n (i32.add (local.get $n) (i32.const 1)))))
              (local.set $j (i32.add (local.get $j) (i32.const 1)))
              (br_if $each (i32.lt_u (local.get $j) (i32.const 16))))))
        (v128.store (local.get $a) (v128.const i64x2 0 0))
        (v128.store offset=16 (local.get $a) (v128.const i64x2 0 0))
        (v128.store offset=32 (local.get $a) (v128.const i64x2 0 0))
        (v128.store offset=48 (local.get $a) (v128.const i64x2 0 0))
        (v128.store offset=64 (local.get $a) (v128.const i64x2 0 0))
        (v128.store offset=80 (local.get $a) (v128.const i64x2 0 0))
        (v128.store offset=96 (local.get $a) (v128.const i64x2 0 0))
        (v128.store offset=112 (local.get $a) (v128.const i64x2 0 0))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $sixteen)))
    (global.set $found (local.get $n))
    (local.get $i))

  ;; A floor for a tile's sweep: the k-th largest of the maxima of SUMS' blocks of 64 among [0, end) (end a
  ;; multiple of 8, 1 <= k <= 1024), counting positive maxima only, or 0 when fewer than k are positive. Each
  ;; such maximum is a different slot's sum, so at least k sums of the tile reach it: no slot of the tile's
  ;; best k is below it, and with far more blocks than k it is close to the tile's k-th largest sum. The
  ;; maxima (eight sums at a time, SIMD) go to MAXES, then a min-heap of the k largest (HEAP, its root the
  ;; least) is kept over them, eight maxima at a time tested against the root at once once it is full.
  (func (export "kth") (param $end i32) (param $k i32) (result f64)
    (local $i i32) (local $a i32) (local $j i32) (local $n i32) (local $x f64) (local $root v128)
    (local $p i32) (local $c i32) (local $y f64) (local $m v128) (local $b i32) (local $stop i32)
    ;; The blocks' maxima (0 for a block with no positive sum), padded with zeros to a multiple of eight.
    (block $maxed
      (loop $block
        (br_if $maxed (i32.ge_u (local.get $i) (local.get $end)))
        (local.set $m (v128.const i64x2 0 0))
        (local.set $stop (i32.add (local.get $i) (i32.const 64)))
        (if (i32.gt_u (local.get $stop) (local.get $end)) (then (local.set $stop (local.get $end))))
        (loop $eights
          (local.set $a (i32.shl (local.get $i) (i32.const 3)))
          (local.set $m
            (f64x2.pmax
              (f64x2.pmax (local.get $m) (f64x2.pmax (v128.load (local.get $a)) (v128.load offset=16 (local.get $a))))
              (f64x2.pmax (v128.load offset=32 (local.get $a)) (v128.load offset=48 (local.get $a)))))
          (local.set $i (i32.add (local.get $i) (i32.const 8)))
          (br_if $eights (i32.lt_u (local.get $i) (local.get $stop))))
        (f64.store offset=533248 (i32.shl (local.get $b) (i32.const 3))
          (f64.max (f64x2.extract_lane 0 (local.get $m)) (f64x2.extract_lane 1 (local.get $m))))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block)))
    (loop $pad
      (if (i32.and (local.get $b) (i32.const 7))
        (then
          (f64.store offset=533248 (i32.shl (local.get $b) (i32.const 3)) (f64.const 0))
          (local.set $b (i32.add (local.get $b) (i32.const 1)))
          (br $pad))))
    (local.set $end (local.get $b))
    (local.set $i (i32.const 0))
    (block $done
      (loop $eight
        (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
        (local.set $a (i32.shl (local.get $i) (i32.const 3)))
        (if (i32.or (i32.lt_u (local.get $n) (local.get $k))
              (v128.any_true
                (v128.or
                  (v128.or (f64x2.gt (v128.load offset=533248 (local.get $a)) (local.get $root))
                           (f64x2.gt (v128.load offset=533264 (local.get $a)) (local.get $root)))
                  (v128.or (f64x2.gt (v128.load offset=533280 (local.get $a)) (local.get $root))
                           (f64x2.gt (v128.load offset=533296 (local.get $a)) (local.get $root))))))
          (then
            (local.set $j (i32.const 0))
            (loop $each
              (local.set $x (f64.load offset=533248 (i32.add (local.get $a) (i32.shl (local.get $j) (i32.const 3)))))
              (if (i32.lt_u (local.get $n) (local.get $k))
                (then
                  (if (f64.gt (local.get $x) (f64.const 0))
                    (then
                      ;; Push: sift up from the end.
                      (local.set $c (local.get $n))
                      (local.set $n (i32.add (local.get $n) (i32.const 1)))
                      (block $placed
                        (loop $up
                          (br_if $placed (i32.eqz (local.get $c)))
                          (local.set $p (i32.shr_u (i32.sub (local.get $c) (i32.const 1)) (i32.const 1)))
                          (local.set $y (f64.load offset=525056 (i32.shl (local.get $p) (i32.const 3))))
                          (br_if $placed (f64.le (local.get $y) (local.get $x)))
                          (f64.store offset=525056 (i32.shl (local.get $c) (i32.const 3)) (local.get $y))
                          (local.set $c (local.get $p))
                          (br $up)))
                      (f64.store offset=525056 (i32.shl (local.get $c) (i32.const 3)) (local.get $x)))))
                (else
                  (if (f64.gt (local.get $x) (f64.load offset=525056 (i32.const 0)))
                    (then
                      ;; Replace the root: sift down.
                      (local.set $c (i32.const 0))
                      (block $placed
                        (loop $down
                          (local.set $p (i32.add (i32.shl (local.get $c) (i32.const 1)) (i32.const 1)))
                          (br_if $placed (i32.ge_u (local.get $p) (local.get $k)))
                          (if (i32.lt_u (i32.add (local.get $p) (i32.const 1)) (local.get $k))
                            (then
                              (if (f64.lt (f64.load offset=525064 (i32.shl (local.get $p) (i32.const 3)))
                                          (f64.load offset=525056 (i32.shl (local.get $p) (i32.const 3))))
                                (then (local.set $p (i32.add (local.get $p) (i32.const 1)))))))
                          (local.set $y (f64.load offset=525056 (i32.shl (local.get $p) (i32.const 3))))
                          (br_if $placed (f64.ge (local.get $y) (local.get $x)))
                          (f64.store offset=525056 (i32.shl (local.get $c) (i32.const 3)) (local.get $y))
                          (local.set $c (local.get $p))
                          (br $down)))
                      (f64.store offset=525056 (i32.shl (local.get $c) (i32.const 3)) (local.get $x))))))
              (local.set $j (i32.add (local.get $j) (i32.const 1)))
              (br_if $each (i32.lt_u (local.get $j) (i32.const 8))))
            (if (i32.ge_u (local.get $n) (local.get $k))
              (then (local.set $root (f64x2.splat (f64.load offset=525056 (i32.const 0))))))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $eight)))
    (if (result f64) (i32.lt_u (local.get $n) (local.get $k))
      (then (f64.const 0))
      (else (f64.load offset=525056 (i32.const 0)))))

  (func (export "found") (result i32) (global.get $found))
)
