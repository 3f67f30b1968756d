use serde::Serialize;

/// Linux I/O priority class (`ioprio_set(2)`); the numeric values are the kernel's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PrioClass {
    /// No class set: the kernel derives best-effort from the task's nice value.
    #[default]
    None = 0,
    RealTime = 1,
    BestEffort = 2,
    Idle = 3,
}

impl PrioClass {
    pub fn from_number(n: u8) -> Option<PrioClass> {
        Some(match n {
            0 => PrioClass::None,
            1 => PrioClass::RealTime,
            2 => PrioClass::BestEffort,
            3 => PrioClass::Idle,
            _ => return None,
        })
    }
    pub const fn name(self) -> &'static str {
        match self {
            PrioClass::None => "none",
            PrioClass::RealTime => "rt",
            PrioClass::BestEffort => "be",
            PrioClass::Idle => "idle",
        }
    }
}

/// An I/O priority: class plus level 0..=7, where level 0 is the most important.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct IoPrio {
    pub class: PrioClass,
    pub level: u8,
}

impl IoPrio {
    /// The kernel's default level (`IOPRIO_NORM`).
    pub const NORM_LEVEL: u8 = 4;
    pub const LEVELS: u8 = 8;

    pub const fn new(class: PrioClass, level: u8) -> IoPrio {
        IoPrio { class, level }
    }
    pub const fn rt(level: u8) -> IoPrio {
        IoPrio::new(PrioClass::RealTime, level)
    }
    pub const fn be(level: u8) -> IoPrio {
        IoPrio::new(PrioClass::BestEffort, level)
    }

    /// What the kernel applies when no class is set: best-effort at level
    /// `(nice + 20) / 5` (`task_nice_ioprio`).
    pub fn effective(self, nice: i8) -> IoPrio {
        match self.class {
            PrioClass::None => IoPrio::be(((i32::from(nice) + 20) / 5).clamp(0, 7) as u8),
            _ => self,
        }
    }

    /// The 16-bit value the kernel and fio use: `class << 13 | level`.
    pub const fn to_raw(self) -> u16 {
        ((self.class as u16) << 13) | self.level as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_prio_follows_nice() {
        let unset = IoPrio::default();
        assert_eq!(unset.effective(0), IoPrio::be(4));
        assert_eq!(unset.effective(-20), IoPrio::be(0));
        assert_eq!(unset.effective(19), IoPrio::be(7));
        assert_eq!(IoPrio::rt(2).effective(19), IoPrio::rt(2));
    }

    #[test]
    fn raw_value_matches_kernel_layout() {
        assert_eq!(IoPrio::rt(0).to_raw(), 1 << 13);
        assert_eq!(IoPrio::be(4).to_raw(), (2 << 13) | 4);
    }
}
