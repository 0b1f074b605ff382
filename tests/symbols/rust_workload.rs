// A std-only Rust program for tests/symbols/rust_test.sh: its own functions
// (a free function, a trait method, a generic function, a slice
// comparison) each take a large share of its CPU, and churn_map allocates.
// Usage: rust_workload ROUNDS
use std::collections::HashMap;
use std::hint::black_box;

#[inline(never)]
fn churn_map(rounds: u64) -> u64 {
    let mut map: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut sum = 0u64;
    for i in 0..rounds {
        map.insert(i % 4096, vec![(i & 0xff) as u8; 64 + (i % 128) as usize]);
        if let Some(v) = map.get(&(i.wrapping_mul(7) % 4096)) {
            sum = sum.wrapping_add(v.len() as u64);
        }
    }
    sum
}

#[inline(never)]
fn compare_slices(rounds: u64) -> u64 {
    let a: Vec<u64> = (0..4096).collect();
    let b = a.clone();
    let mut equal = 0;
    for _ in 0..rounds {
        if black_box(&a[..]) == black_box(&b[..]) {
            equal += 1;
        }
    }
    equal
}

trait Shape {
    fn area(&self) -> f64;
}

struct Square(f64);

impl Shape for Square {
    #[inline(never)]
    fn area(&self) -> f64 {
        let mut x = self.0;
        for _ in 0..1000 {
            x = (x * 1.0000001).sqrt() * x.sqrt();
        }
        x
    }
}

#[inline(never)]
fn generic_work<T: Shape>(shape: &T, rounds: u64) -> f64 {
    let mut total = 0.0;
    for _ in 0..rounds {
        total += black_box(shape).area();
    }
    total
}

fn main() {
    let rounds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let mut out = 0u64;
    for _ in 0..rounds {
        out = out.wrapping_add(churn_map(20000));
        out = out.wrapping_add(compare_slices(2000));
        out = out.wrapping_add(generic_work(&Square(2.0), 150) as u64);
    }
    println!("{}", out);
}
