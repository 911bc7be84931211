export { createDropdownMachine } from './dropdown/dropdown.machine';
export { createDialogMachine } from './dialog/dialog.machine';
