//! How much memory this process may still use, for the servers and sessions that
//! refuse work larger than the machine before they allocate it (`tacit mpc`'s and
//! the library builders' default memory bound).

/// The memory (bytes) this process may still use: the least of the memory the
/// system has available (`MemAvailable`), what is left under its cgroup's limit, what
/// is left under its address-space limit (`ulimit -v`), and `TACIT_MEMORY_LIMIT` when
/// set (bytes, or with a K/M/G suffix). `None` where none of these is known.
pub fn memory_budget() -> Option<u64> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let mut budget: Option<u64> = None;
    let mut cap = |v: Option<u64>| {
        if let Some(v) = v {
            budget = Some(budget.map_or(v, |b| b.min(v)));
        }
    };
    let kib_field = |text: &str, key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|k| k * 1024)
    };
    if let Some(m) = read("/proc/meminfo") {
        cap(kib_field(&m, "MemAvailable:"));
    }
    if let (Some(max), Some(cur)) = (read("/sys/fs/cgroup/memory.max"), read("/sys/fs/cgroup/memory.current"))
        && let (Ok(max), Ok(cur)) = (max.trim().parse::<u64>(), cur.trim().parse::<u64>())
    {
        cap(Some(max.saturating_sub(cur)));
    }
    if let (Some(limits), Some(status)) = (read("/proc/self/limits"), read("/proc/self/status")) {
        let soft = limits
            .lines()
            .find(|l| l.starts_with("Max address space"))
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|v| v.parse::<u64>().ok());
        if let (Some(soft), Some(used)) = (soft, kib_field(&status, "VmSize:")) {
            cap(Some(soft.saturating_sub(used)));
        }
    }
    if let Ok(v) = std::env::var("TACIT_MEMORY_LIMIT") {
        cap(parse_bytes(&v));
    }
    budget
}

/// `123`, `64K`, `512M`, `2G` as bytes.
pub fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1u64 << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mul)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_their_suffix_and_overflow_is_none() {
        assert_eq!(parse_bytes("123"), Some(123));
        assert_eq!(parse_bytes("64K"), Some(64 << 10));
        assert_eq!(parse_bytes(" 2g "), Some(2 << 30));
        assert_eq!(parse_bytes("x"), None);
        assert_eq!(parse_bytes("99999999999999999999G"), None);
    }
}
